#!/usr/bin/env bash
# The man page (deploy/waitroomd.8) renders without a groff warning, carries the project's
# version, and names every command and option that `waitroomd --help` lists, so the two cannot
# drift apart unnoticed. Exit 77 (skipped) without groff (Debian's groff-base).
#   man_page_test.sh WAITROOMD MAN_PAGE VERSION
set -euo pipefail
waitroomd="$1"
page="$2"
version="$3"
command -v groff >/dev/null || { echo "groff not found (groff-base): skipped"; exit 77; }
if ! grep -q "^\.TH WAITROOMD 8 .*\"waitroom ${version//./\\.}\"" "$page"; then
  echo "$page: its .TH line does not name waitroom ${version}"; exit 1
fi
warnings="$(groff -man -ww -z -Tutf8 "$page" 2>&1)"
if [[ -n "$warnings" ]]; then
  echo "groff warns about $page:"; echo "$warnings"; exit 1
fi
text="$(groff -man -Tascii -P-cbou "$page" 2>/dev/null)"
missing=0
# Every word of the usage that is a command ("waitroomd check") or an option ("--room").
words="$("$waitroomd" --help | grep -oE '(waitroomd [a-z]+|(^|[[:space:]])--?[a-zA-Z][a-z-]*)' |
  sed -E 's/^waitroomd //; s/^[[:space:]]+//' | sort -u)"
[[ -n "$words" ]] || { echo "no commands or options read from waitroomd --help"; exit 1; }
for word in $words; do
  # A command as "waitroomd WORD" (or WORD at the start of a line, as COMMANDS lists them), an
  # option as a whole word: "-c" inside "--config" or "self-hosted" does not count.
  if [[ "$word" == -* ]]; then
    pattern="(^|[^[:alnum:]-])${word}([^[:alnum:]-]|\$)"
  else
    pattern="(waitroomd |^ *)${word}([^[:alnum:]-]|\$)"
  fi
  if ! grep -qE -- "$pattern" <<<"$text"; then
    echo "$page does not mention '$word' (from waitroomd --help)"; missing=1
  fi
done
exit "$missing"
