#!/usr/bin/env bash
# Build ctk's node-agent OCI image without a container daemon:
#   packaging/image/build.sh OUTDIR        writes OUTDIR/oci/ (OCI layout) and OUTDIR/ctk.oci.tar
#                                          (oci-archive), prints the image reference it tagged
#   packaging/image/build.sh --print-ref   prints that reference only (the chart's default image)
# Base: a slim Debian bookworm root with python3 (mmdebstrap, cached by its inputs under
# $CTK_IMAGE_CACHE, default ~/.cache/ctk-image). ctk goes in from a wheelhouse built here (pip
# inside the root cannot reach an index). Layers: the base, then /usr/local (ctk). Reproducible:
# file times and the image's created time are SOURCE_DATE_EPOCH (default: the last commit's time).
# Needs root (or fakeroot-free mmdebstrap unshare mode), mmdebstrap, umoci, skopeo, python3, pip, uv.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

version="$(sed -n 's/^version = "\(.*\)"$/\1/p' "$repo/pyproject.toml" | head -1)"
repository="${CTK_IMAGE_REPOSITORY:-localhost/ctk}"
ref="$repository:$version"
if [ "${1:-}" = "--print-ref" ]; then
    echo "$ref"
    exit 0
fi
[ $# -eq 1 ] || { echo "usage: $0 OUTDIR | --print-ref" >&2; exit 2; }
for tool in mmdebstrap umoci skopeo; do
    command -v "$tool" >/dev/null || { echo "build.sh: $tool not found (apt-get install mmdebstrap umoci skopeo)" >&2; exit 2; }
done
out="$(mkdir -p "$1" && cd "$1" && pwd)"
start=$(date +%s)
revision="$(git -C "$repo" rev-parse HEAD 2>/dev/null || echo unknown)"
if [ -n "$(git -C "$repo" status --porcelain 2>/dev/null)" ]; then revision="$revision-dirty"; fi
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git -C "$repo" log -1 --format=%ct 2>/dev/null || echo 0)}"
created="$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)"
work="$out/work"
rm -rf "$work" "$out/oci" "$out/ctk.oci.tar"
mkdir -p "$work/wheels"

# 1. The base root: Essential packages + python3, no docs/man/locales; cached by its inputs.
suite=bookworm
mirror="${CTK_IMAGE_MIRROR:-http://deb.debian.org/debian}"
packages="python3"
# Docs, man pages, locales go (copyright files stay); merged /usr without the usrmerge package
# (which would pull in perl).
trim='cd "$1" && find usr/share/doc -mindepth 2 ! -name copyright ! -type d -delete && rm -rf usr/share/man/* usr/share/info/* usr/share/locale/* usr/share/lintian/* var/log/* var/cache/debconf/*-old'
# The key leaves SOURCE_DATE_EPOCH out: the base is reused across commits (its file times are those
# of its first build); delete the cache to pick up Debian updates.
key="$(printf '%s\n' "$suite" "$mirror" "$packages" "$trim" | sha256sum | cut -c1-16)"
cache="${CTK_IMAGE_CACHE:-$HOME/.cache/ctk-image}"
base="$cache/base-$suite-$key.tar"
if [ ! -s "$base" ]; then
    mkdir -p "$cache"
    echo "build.sh: building the base root (mmdebstrap $suite)" >&2
    trap 'rm -f "$base.$$.tmp"' EXIT
    mmdebstrap --quiet --format=tar --variant=essential --include="$packages" \
        --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr --customize-hook="$trim" \
        "$suite" "$base.$$.tmp" "$mirror" >&2
    mv "$base.$$.tmp" "$base"
    trap - EXIT
fi

# 2. The wheelhouse, built outside: ctk's wheel (with the native hook when the build has it) and
# its dependencies as binary wheels for the image's Python (3.11, manylinux x86_64).
# (tagged manylinux_2_17_x86_64 with bdist_wheel's --plat-name: the hook is static, and the
# download below takes only manylinux wheels)
python3 -m pip wheel --quiet --no-deps --wheel-dir "$work/wheels" \
    -C--build-option=--plat-name=manylinux_2_17_x86_64 "$repo" >&2
# The set of wheels is resolved for the image's Python by uv: pip's --python-version picks wheel
# tags and checks Requires-Python but evaluates environment markers for the Python running it,
# so on a 3.13 host it left out typing-extensions, which referencing needs below 3.13 only.
# pip then downloads exactly that set (with the machine's pip settings).
if command -v uv >/dev/null; then uv=(uv); elif python3 -m uv --version >/dev/null 2>&1; then uv=(python3 -m uv); else
    echo "build.sh: uv not found (python3 -m pip install uv)" >&2
    exit 2
fi
"${uv[@]}" pip compile --quiet --no-header --no-annotate --python-version 3.11 \
    --python-platform x86_64-manylinux_2_17 --only-binary :all: -o "$work/requirements.txt" \
    - <<<"$(printf '%s\n' "$(ls "$work"/wheels/ctk-*.whl)" pip)" >&2
python3 -m pip download --quiet --dest "$work/wheels" --only-binary=:all: --no-deps \
    --python-version 3.11 --implementation cp --abi cp311 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux_2_28_x86_64 \
    -r "$work/requirements.txt" >&2

# 3. The ctk layer: install into an unpacked copy of the base (Debian's python3 puts it under
# /usr/local: lib/python3.11/dist-packages and bin), keep only /usr/local.
root="$work/root"
mkdir -p "$root"
tar -xf "$base" -C "$root"
mkdir -p "$root/tmp/wheels"
cp "$work"/wheels/*.whl "$root/tmp/wheels/"
pipwhl="$(cd "$root/tmp/wheels" && ls pip-*.whl | head -1)"
chroot "$root" /usr/bin/python3 "/tmp/wheels/$pipwhl/pip" install --quiet --no-index --no-compile \
    --disable-pip-version-check --root-user-action=ignore --break-system-packages --find-links /tmp/wheels ctk >&2
install -m 0755 "$here/uninstall_wait.py" "$root/usr/local/bin/ctk-uninstall-wait"
rm -rf "$root/tmp/wheels" "$root"/usr/local/lib/python3*/dist-packages/pip "$root"/usr/local/lib/python3*/dist-packages/pip-*
chroot "$root" /usr/bin/python3 -m compileall -q --invalidation-mode unchecked-hash /usr/local/lib >&2
chroot "$root" /usr/local/bin/ctk --version >&2
tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --clamp-mtime --owner=0 --group=0 --numeric-owner \
    --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
    -C "$root" -cf "$work/ctk.tar" usr/local

# 4. The OCI layout: two layers, config and annotations, then the oci-archive.
layout="$out/oci"
umoci init --layout "$layout"
umoci new --image "$layout:$version"
hist=(--history.created "$created" --history.author ctk)
umoci raw add-layer --image "$layout:$version" "${hist[@]}" --history.created_by "mmdebstrap $suite $packages" "$base"
umoci raw add-layer --image "$layout:$version" "${hist[@]}" --history.created_by "pip install ctk $version" "$work/ctk.tar"
annotations=(
    "org.opencontainers.image.title=ctk"
    "org.opencontainers.image.description=ctk agent: GPU container node configuration, CDI, drift repair"
    "org.opencontainers.image.version=$version"
    "org.opencontainers.image.revision=$revision"
    "org.opencontainers.image.created=$created"
    "org.opencontainers.image.licenses=Apache-2.0"
    "org.opencontainers.image.ref.name=$ref"
)
args=()
# where the source lives: only when the builder says (CTK_IMAGE_SOURCE), never a made-up address
if [ -n "${CTK_IMAGE_SOURCE:-}" ]; then
    annotations+=("org.opencontainers.image.source=$CTK_IMAGE_SOURCE")
fi
for a in "${annotations[@]}"; do args+=(--manifest.annotation "$a" --config.label "$a"); done
umoci config --image "$layout:$version" --no-history --created "$created" --author ctk \
    --os linux --architecture amd64 \
    --config.entrypoint ctk --config.entrypoint agent --clear config.cmd \
    --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --config.env PYTHONDONTWRITEBYTECODE=1 \
    --config.workingdir / "${args[@]}"
umoci gc --layout "$layout"
skopeo copy --quiet "oci:$layout:$version" "oci-archive:$out/ctk.oci.tar:$ref" >&2

size=$(( $(stat -c %s "$base") + $(stat -c %s "$work/ctk.tar") ))
echo "build.sh: $ref: $((size / 1000000)) MB uncompressed ($(stat -c %s "$out/ctk.oci.tar" | awk '{printf "%d", $1/1000000}') MB archive), built in $(( $(date +%s) - start )) s" >&2
rm -rf "$work"
echo "$ref"
