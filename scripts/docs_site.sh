#!/usr/bin/env bash
# The documentation site (mkdocs.yml): the tutorials in English and Chinese, the design notes.
#   scripts/docs_site.sh            build into build/site (mkdocs build --strict)
#   scripts/docs_site.sh --serve    build, then serve on http://127.0.0.1:8000 (rebuilds on change)
# Needs Debian's mkdocs and mkdocs-material (scripts/setup.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v mkdocs >/dev/null; then
  echo "docs_site.sh: mkdocs not found; run scripts/setup.sh (it installs mkdocs and mkdocs-material)" >&2
  exit 2
fi
case "${1:-}" in
  --serve) exec mkdocs serve --strict --dev-addr 127.0.0.1:8000 ;;
  "") mkdocs build --strict && echo "docs_site.sh: built into build/site (open build/site/index.html, or --serve)" ;;
  *) echo "docs_site.sh: unknown argument $1 (use --serve or nothing)" >&2; exit 2 ;;
esac
