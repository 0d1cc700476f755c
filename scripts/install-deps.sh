#!/bin/sh
# Install the Debian 12 packages attngeom needs to build and test, if missing
# (with arguments: those packages instead; scripts/install-bench-deps.sh).
# man-db and groff-base render the man pages, libgfortran-12-dev is what
# a static link against OpenBLAS needs (tests/cli/install.sh checks both);
# libopenmpi-dev and openmpi-bin build and test attngeom-mpi (make mpi);
# libigraph-dev computes attention flow, python3-networkx is its reference
# (tests/ref/check_flow.py).
# As root it runs apt-get; otherwise it prints the exact command and fails.
set -eu
PKGS="build-essential pkg-config liblapacke-dev libopenblas-dev libgsl-dev \
libjansson-dev libpcre2-dev libutf8proc-dev libcriterion-dev liblzma-dev \
python3 python3-numpy python3-scipy python3-pot python3-regex python3-pytest \
python3-setuptools python3-pip python3-venv python3-pandas python3-statsmodels valgrind \
libcairo2-dev libfontconfig-dev fonts-dejavu-core libpng-dev libjpeg-dev \
man-db groff-base libgfortran-12-dev libsndfile1-dev \
libopenmpi-dev openmpi-bin libigraph-dev python3-networkx"
[ $# -gt 0 ] && PKGS="$*"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
        || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
    echo "attngeom: missing Debian packages; install them as root (or with sudo):" >&2
    echo "  apt-get install -y$missing" >&2
    exit 1
fi
echo "attngeom: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends$missing >/dev/null
