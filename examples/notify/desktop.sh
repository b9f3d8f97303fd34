#!/bin/sh
# Show a cosmic-curriculum notification on the desktop (notify-send), or mail it
# (mail or sendmail, to COSMIC_MAIL_TO); skips quietly when neither is available.
#
#   stages.toml:  notify_command = ["examples/notify/desktop.sh"]
#   environment:  COSMIC_MAIL_TO=you@example.com   (optional)
set -u
cat >/dev/null  # the JSON on stdin: the COSMIC_* variables say enough here
title="cosmic-curriculum: ${COSMIC_EVENT:-event} in $(basename "${COSMIC_WORKSPACE:-.}")"
body="${COSMIC_MESSAGE:-}
next: ${COSMIC_NEXT:-}"
if command -v notify-send >/dev/null 2>&1 && [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
    notify-send --app-name=cosmic-curriculum "$title" "$body" && exit 0
fi
if [ -n "${COSMIC_MAIL_TO:-}" ]; then
    if command -v mail >/dev/null 2>&1; then
        printf '%s\n' "$body" | mail -s "$title" "$COSMIC_MAIL_TO"
        exit $?
    fi
    if command -v sendmail >/dev/null 2>&1; then
        printf 'To: %s\nSubject: %s\n\n%s\n' "$COSMIC_MAIL_TO" "$title" "$body" | sendmail -t
        exit $?
    fi
fi
echo "desktop.sh: no notify-send with a display and no mail/sendmail with COSMIC_MAIL_TO; skipped" >&2
exit 0
