#!/bin/sh
# Post a cosmic-curriculum notification to a chat webhook (Slack, Discord, Mattermost,
# ntfy, ...): webhook.py beside this file does the work with Python's JSON encoder (a shell
# cannot escape arbitrary text into JSON safely); see it for the exit statuses.
#
#   stages.toml:  notify_command = ["examples/notify/webhook.sh"]
#   environment:  COSMIC_WEBHOOK_URL=https://hooks.slack.com/services/...
set -eu
exec "${PYTHON:-python3}" "$(dirname "$0")/webhook.py"
