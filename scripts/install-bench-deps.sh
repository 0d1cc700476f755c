#!/bin/sh
# Install the Debian 12 packages `make bench` needs beyond install-deps.sh:
# the peers it measures attngeom against (numpy/scipy for `matrix`, PyTorch
# for the forward pass; bench/peers.py) and Pillow, which
# tests/ref/check_image_pil.py compares the image preprocessing with. `make test` does not need them.
# As root it runs apt-get; otherwise it prints the exact command and fails
# (install-deps.sh, given the list).
set -eu
exec sh "$(dirname "$0")/install-deps.sh" python3 python3-numpy python3-scipy python3-torch \
    python3-pil
