#!/bin/sh
# A stand-in browser for the OAuth sign-in step of a local MCP client (mcp-remote and others that open
# the authorization URL with xdg-open, which honours $BROWSER). It does what a person would: open the
# page, sign in, allow, and follow the redirect to the client's loopback callback.
#   BROWSER=scripts/oauth-browser.sh AMBA_OAUTH_EMAIL=… AMBA_OAUTH_PASSWORD=… <client>
#   BROWSER=scripts/oauth-browser.sh AMBA_OAUTH_DEVELOPER_TOKEN=amba_dev_… <client>
set -eu
url="$1"
jar="$(mktemp)"
trap 'rm -f "$jar"' EXIT
tx="$(curl -sS -c "$jar" "$url" | sed -n 's/.*name="tx" value="\([^"]*\)".*/\1/p' | head -n 1)"
origin="$(printf '%s' "$url" | sed -E 's#^(https?://[^/]+).*#\1#')"
if [ -n "${AMBA_OAUTH_DEVELOPER_TOKEN:-}" ]; then
  set -- --data-urlencode mode=developer --data-urlencode "developer_token=$AMBA_OAUTH_DEVELOPER_TOKEN"
else
  set -- --data-urlencode mode=end_user --data-urlencode "email=$AMBA_OAUTH_EMAIL" \
    --data-urlencode "password=$AMBA_OAUTH_PASSWORD"
fi
location="$(curl -sS -b "$jar" -o /dev/null -w '%{redirect_url}' --data-urlencode "tx=$tx" \
  --data-urlencode action=allow "$@" "$origin/authorize")"
[ -n "$location" ] || { echo "oauth-browser: sign-in refused" >&2; exit 1; }
curl -sS -o /dev/null "$location"
