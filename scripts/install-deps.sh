#!/bin/sh
# Installs the Debian packages Shoal builds and tests with. Safe to run again:
# it only calls apt-get when something is missing.
set -eu

PACKAGES="build-essential cmake ninja-build ccache pkg-config \
  libgtest-dev libgmock-dev \
  nlohmann-json3-dev libcli11-dev libtomlplusplus-dev libfmt-dev libspdlog-dev \
  libsqlite3-dev libcpp-httplib-dev libssl-dev libpq-dev postgresql \
  clang libclang-rt-14-dev clang-format universal-ctags \
  python3-torch openmpi-bin libopenmpi-dev \
  prometheus curl systemd libarchive-dev libyaml-cpp-dev crun runc busybox-static \
  chromium nodejs"

missing=""
for p in $PACKAGES; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done

if [ -z "$missing" ]; then
  exit 0
fi

echo "install-deps: installing:$missing"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
