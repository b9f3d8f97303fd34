#!/bin/sh
# Post a cosmic-curriculum notification to a chat webhook (Slack, Discord, Mattermost,
# ntfy, ...) as one JSON object: {"text": ..., "content": ..., "event": {the notification}}.
# Slack and Mattermost show "text", Discord shows "content"; "event" is the whole object.
#
#   stages.toml:  notify_command = ["examples/notify/webhook.sh"]
#   environment:  COSMIC_WEBHOOK_URL=https://hooks.slack.com/services/...
#
# The notification arrives as JSON on stdin and as COSMIC_* environment variables.
set -eu
url="${COSMIC_WEBHOOK_URL:?set COSMIC_WEBHOOK_URL to the webhook URL}"
if ! command -v curl >/dev/null 2>&1; then
    echo "webhook.sh: curl is not installed" >&2
    exit 1
fi
event=$(cat)
# A JSON string body: escape backslashes and quotes, flatten line breaks and tabs.
json_string() { printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' | tr '\n\r\t' '   '; }
text=$(json_string "[${COSMIC_EVENT}] $(basename "${COSMIC_WORKSPACE}"): ${COSMIC_MESSAGE} (next: ${COSMIC_NEXT})")
printf '{"text": "%s", "content": "%s", "event": %s}\n' "$text" "$text" "$event" |
    curl --fail --silent --show-error --max-time 20 \
        -H 'Content-Type: application/json' --data-binary @- "$url" >/dev/null
