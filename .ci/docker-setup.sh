#!/usr/bin/env bash
# Make the Docker sandbox tests runnable on a fresh Debian machine (no systemd, no registry):
#   1. install Debian's docker.io and debootstrap when missing;
#   2. start dockerd in the background unless `docker info` already answers;
#   3. build the bot images offline (debootstrap + docker import) unless they exist: the
#      Python/JavaScript one every Docker test uses, and one per compiled-language family
#      (C/C++/Rust, Java), which only the compiled kits' tests need (REFEREE_IMAGES=python
#      builds the first alone).
# Step 3 is bash on purpose: this runs before `make test` creates .venv. It does what
# `python -m referee.sandbox.image --offline` does and shares its cache, so either one reuses
# the other's root file system tarball.
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE=${REFEREE_DOCKER_IMAGE:-arschloch-referee-bot:latest}
NATIVE_IMAGE=arschloch-referee-bot-native:latest
JAVA_IMAGE=arschloch-referee-bot-java:latest
CACHE=/var/cache/arschloch-referee
DOCKERD_LOG=${DOCKERD_LOG:-/var/log/dockerd-ci.log}
STDLIB_CHECK="import json, asyncio, random, sqlite3"
# Keep these in step with FAMILIES in referee/sandbox/image.py. The Python/JavaScript image
# also has Perl with its core modules (JSON::PP); every image has python3 for its check.
PACKAGES=python3,nodejs,perl
NATIVE_PACKAGES=python3,make,gcc,g++,libc6-dev,rustc
JAVA_PACKAGES=python3,make,openjdk-17-jdk-headless
# Keep in step with IMPORT_CHANGES in referee/sandbox/image.py.
CHANGES=(
    --change "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    --change "ENV LANG=C.UTF-8"
    --change "ENV PYTHONDONTWRITEBYTECODE=1 TMPDIR=/tmp HOME=/tmp"
    --change "USER 65534:65534"
    --change "WORKDIR /bot"
    --change 'CMD ["python3"]'
)

# The owner label (host/pid of this script) keeps a referee starting meanwhile from removing
# the check containers below as orphans of a dead referee.
LABELS=(--label org.arschloch-referee=1 --label "org.arschloch-referee.owner=$(cat /proc/sys/kernel/hostname)/$$")

say() { echo "docker-setup: $*"; }
die() { echo "docker-setup: error: $*" >&2; exit 1; }

install_packages() {
    local need=()
    command -v dockerd >/dev/null || need+=(docker.io)
    command -v debootstrap >/dev/null || need+=(debootstrap)
    if ((${#need[@]})); then
        say "installing ${need[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -q
        apt-get install -y -q --no-install-recommends "${need[@]}"
    fi
}

# Waits up to $1 seconds for `docker info`, giving up early when dockerd (pid $2) died.
wait_for_daemon() {
    local seconds=$1 pid=$2
    for ((i = 0; i < seconds; i++)); do
        docker info >/dev/null 2>&1 && return 0
        kill -0 "$pid" 2>/dev/null || return 1
        sleep 1
    done
    return 1
}

start_daemon() {
    if docker info >/dev/null 2>&1; then
        say "dockerd already answers"
        return
    fi
    # First the defaults (bridge + iptables, overlay2 with vfs as the daemon's own fallback);
    # then without iptables/bridge (machines without netfilter; bots use network none
    # anyway); then the vfs storage driver (an overlay root that refuses overlay2).
    local attempts=(
        ""
        "--iptables=false --ip6tables=false --bridge=none"
        "--iptables=false --ip6tables=false --bridge=none --storage-driver=vfs"
    )
    local flags pid
    for flags in "${attempts[@]}"; do
        say "starting dockerd ${flags:-with default options} (log: $DOCKERD_LOG)"
        # 9>&-: the daemon outlives this script and must not inherit setup-machine's lock
        # (fd 9), or every later `make test` on this machine would wait for it forever.
        # shellcheck disable=SC2086 # the flags are words on purpose
        nohup dockerd $flags >>"$DOCKERD_LOG" 2>&1 </dev/null 9>&- &
        pid=$!
        if wait_for_daemon 60 "$pid"; then
            say "dockerd answers (pid $pid, storage driver $(docker info -f '{{.Driver}}'))"
            return
        fi
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    tail -n 30 "$DOCKERD_LOG" >&2 || true
    die "dockerd did not answer within 60 s; its log is $DOCKERD_LOG (last lines above)"
}

# Unmounts whatever debootstrap left mounted under $1, then deletes it.
remove_tree() {
    local root=$1 point
    [[ -e $root ]] || return 0
    while read -r point; do
        umount -l "$point" || true
    done < <(awk -v p="$(realpath "$root")/" 'index($2, p) == 1 {print $2}' /proc/mounts | sort -r)
    if awk -v p="$(realpath "$root")/" 'index($2, p) == 1 {found=1} END {exit !found}' /proc/mounts; then
        die "$root still has mounts; remove it by hand"
    fi
    rm -rf --one-file-system "$root"
}

build_rootfs() {
    local packages=$1 suite arch tarball work rootfs
    suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
    [[ -n $suite ]] || die "no VERSION_CODENAME in /etc/os-release: not a Debian host?"
    arch=$(dpkg --print-architecture)
    tarball=$CACHE/rootfs-$suite-$arch-${packages//,/-}.tar
    if [[ -s $tarball ]]; then
        say "using the cached root file system $tarball" >&2
        echo "$tarball"
        return
    fi
    mkdir -p "$CACHE/debs"
    work=$CACHE/build-$$
    remove_tree "$work"
    # shellcheck disable=SC2064 # expand $work now
    trap "remove_tree '$work'" EXIT
    rootfs=$work/rootfs
    say "debootstrap $suite ($arch, minbase + $packages); takes a minute or more" >&2
    debootstrap --variant=minbase --include="$packages" --cache-dir="$CACHE/debs" \
        "$suite" "$rootfs" >&2
    say "trimming package caches, indexes, logs, manuals and translations" >&2
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/cache/apt/*.bin \
        "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/debconf/*-old "$rootfs"/var/log/* \
        "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* "$rootfs"/usr/share/locale/*
    find "$rootfs/usr/share/doc" -mindepth 2 -maxdepth 2 ! -name copyright -exec rm -rf {} +
    tar -C "$rootfs" --numeric-owner --exclude='./dev/*' --exclude='./proc/*' \
        --exclude='./sys/*' -cf "$work/rootfs.tar" .
    mv "$work/rootfs.tar" "$tarball"
    remove_tree "$work"
    trap - EXIT
    say "cached $tarball ($(du -m "$tarball" | cut -f1) MiB)" >&2
    echo "$tarball"
}

# build_image IMAGE PACKAGES TOOLS [PROBE]: TOOLS are the commands the image must have, PROBE
# one more shell command that must succeed in it.
build_image() {
    local image=$1 packages=$2 tools=$3
    local probe="for t in $tools; do command -v \$t || exit 1; done; ${4:-true}"
    if docker image inspect "$image" >/dev/null 2>&1; then
        if docker run --rm --network none "${LABELS[@]}" "$image" sh -c "$probe" >/dev/null 2>&1; then
            say "image $image already built"
            return
        fi
        say "image $image lacks one of: $tools; rebuilding it"
        docker image rm -f "$image" >/dev/null
    fi
    [[ $(id -u) -eq 0 ]] || die "building $image offline needs root (debootstrap)"
    local tarball started=$SECONDS
    tarball=$(build_rootfs "$packages")
    say "docker import $tarball as $image"
    docker import "${CHANGES[@]}" "$tarball" "$image" >/dev/null
    say "checking the standard library inside $image"
    docker run --rm --network none --read-only "${LABELS[@]}" \
        "$image" python3 -c "$STDLIB_CHECK" || die "$image lacks part of Python's stdlib"
    say "built $image in $((SECONDS - started)) s ($(docker image inspect -f '{{.Size}}' "$image" | awk '{printf "%d MB", $1 / 1e6}'))"
}

install_packages
start_daemon
build_image "$IMAGE" "$PACKAGES" "python3 node perl" "perl -MJSON::PP -e 1"
if [[ ${REFEREE_IMAGES:-all} != python ]]; then
    build_image "$NATIVE_IMAGE" "$NATIVE_PACKAGES" "make cc c++ rustc"
    build_image "$JAVA_IMAGE" "$JAVA_PACKAGES" "make javac java"
fi
