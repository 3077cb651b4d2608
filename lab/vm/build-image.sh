#!/usr/bin/env bash
# Build the VM-lab guest image from Debian packages into the cache directory (outside the repository):
# a debootstrapped bookworm with the stock kernel, rdma-core, perftest, python3, sshd and an out-of-tree netdevsim,
# as a raw ext4 image plus its kernel and initrd. Rebuilt only when its inputs (this script, the init, the package
# list) change. Usage: build-image.sh [CACHE_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${1:-${AIFABRIC_VMLAB_CACHE:-/var/cache/aifabric-vmlab}}
packages=linux-image-amd64,initramfs-tools,udev,kmod,iproute2,rdma-core,ibverbs-utils,ibverbs-providers,perftest,python3,pciutils,ethtool,procps,openssh-server,iperf3,python3-pyverbs
# pyroute2 at the collection's own pin (Debian's python3-pyroute2 is 0.7), installed with pip into the guest
pyroute2_pin=$(grep -E '^pyroute2==' "$here/../../constraints.txt")
inputs=$(cat "$0" "$here/guest-init.sh"; echo "$packages $pyroute2_pin")
stamp="$cache/image-$(sha256sum <<<"$inputs" | cut -c1-16).done"
mkdir -p "$cache"
if [ -e "$stamp" ] && [ -e "$cache/image.raw" ]; then echo "vmlab image: up to date ($cache)"; exit 0; fi
start=$SECONDS
for tool in debootstrap mkfs.ext4 qemu-system-x86_64 ssh-keygen; do
  command -v "$tool" >/dev/null || { echo "vmlab: $tool is missing; run 'make vmlab-setup' (apt: debootstrap e2fsprogs qemu-system-x86 openssh-client)"; exit 1; }
done
mirror=$(sed -n 's/^URIs: *\(http[^ ]*debian\)$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n1)
mirror=${mirror:-http://deb.debian.org/debian}

# An SSH key for the lab, kept in the cache (never in the repository).
mkdir -p "$cache/ssh" && chmod 700 "$cache/ssh"
[ -e "$cache/ssh/id_ed25519" ] || ssh-keygen -q -t ed25519 -N "" -C aifabric-vmlab -f "$cache/ssh/id_ed25519"

root="$cache/rootfs"
rm -rf "$root" "$cache"/image-*.done
echo "vmlab: debootstrap from $mirror (about 90 s)"
debootstrap --variant=minbase --include="$packages" bookworm "$root" "$mirror" > "$cache/debootstrap.log" 2>&1 \
  || { tail -20 "$cache/debootstrap.log"; exit 1; }
kver=$(ls "$root/lib/modules" | head -n1)
echo "vmlab: guest kernel $kver ($((SECONDS - start)) s)"

# netdevsim is not built in Debian's kernel: build it out of tree against the guest kernel's headers.
if [ ! -d "/usr/src/linux-headers-$kver" ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "linux-headers-$kver" >/dev/null
fi
src=$(ls /usr/src/linux-source-*.tar.xz | head -n1)
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
tar -xJf "$src" -C "$build" --wildcards '*/drivers/net/netdevsim/*'
nsim=$(ls -d "$build"/*/drivers/net/netdevsim)
make -s -C "/usr/src/linux-headers-$kver" M="$nsim" CONFIG_NETDEVSIM=m modules > "$cache/netdevsim-build.log" 2>&1 \
  || { tail -20 "$cache/netdevsim-build.log"; exit 1; }
mkdir -p "$root/lib/modules/$kver/updates"
cp "$nsim/netdevsim.ko" "$root/lib/modules/$kver/updates/"
chroot "$root" depmod -a "$kver"
echo "vmlab: netdevsim built for $kver"

pip=$here/../../.venv/bin/pip
[ -x "$pip" ] || pip="python3 -m pip"
$pip install -q --no-deps --no-compile --target "$root/usr/local/lib/python3.11/dist-packages" "$pyroute2_pin" \
  || { echo "vmlab: pip could not install $pyroute2_pin into the guest"; exit 1; }
echo "vmlab: $pyroute2_pin installed in the guest"

# The guest's own configuration: init, root's key, sshd, host keys.
install -m 0755 "$here/guest-init.sh" "$root/sbin/aifabric-init"
mkdir -p "$root/root/.ssh" && chmod 700 "$root/root/.ssh"
install -m 0600 "$cache/ssh/id_ed25519.pub" "$root/root/.ssh/authorized_keys"
printf 'PermitRootLogin prohibit-password\nPasswordAuthentication no\nUseDNS no\n' > "$root/etc/ssh/sshd_config.d/aifabric.conf"
chroot "$root" ssh-keygen -A >/dev/null
echo "vmlab" > "$root/etc/hostname"
cp "$root/boot/vmlinuz-$kver" "$cache/vmlinuz"
cp "$root/boot/initrd.img-$kver" "$cache/initrd.img"
echo "$kver" > "$cache/kernel-version"

rm -f "$cache/image.raw"
truncate -s 2G "$cache/image.raw"
mkfs.ext4 -q -F -L aifabric -d "$root" "$cache/image.raw"
rm -rf "$root"
touch "$stamp"
echo "vmlab: image built in $((SECONDS - start)) s: $cache/image.raw ($(du -h "$cache/image.raw" | cut -f1) used)"
