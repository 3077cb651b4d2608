#!/bin/sh
# PID 1 of an aifabric VM-lab guest: mount, udev, name NICs by MAC, address them, sshd, reap children.
# Kernel command line: aifabric.name=<hostname> aifabric.addr=<data address/prefix>
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mkdir -p /dev/pts /run /tmp && mount -t devpts devpts /dev/pts && mount -t tmpfs tmpfs /run && mount -t tmpfs tmpfs /tmp
mount -o remount,rw / 2>/dev/null
arg() { sed -n "s/.*$1=\([^ ]*\).*/\1/p" /proc/cmdline; }
name=$(arg aifabric.name); addr=$(arg aifabric.addr)
hostname "${name:-vmlab}"
echo "aifabric-init: $name starting udev" > /dev/console
/lib/systemd/systemd-udevd --daemon
udevadm trigger --action=add && udevadm settle --timeout=20
# Interface names are not stable (an e1000e once took eth0): name them by the MACs the host gave them, once all
# three NICs exist (under TCG the e1000e can probe seconds after the virtio NICs).
for _ in $(seq 1 60); do
  [ "$(cat /sys/class/net/*/address | grep -c '^52:54:00:af:')" -ge 3 ] && break
  sleep 0.5
done
for dev in /sys/class/net/*; do
  mac=$(cat "$dev/address"); n=$(basename "$dev")
  case "$mac" in
    52:54:00:af:10:*) new=mgmt0 ;;
    52:54:00:af:00:*) new=data0 ;;
    52:54:00:af:20:*) new=pass0 ;;
    *) new="" ;;
  esac
  [ -n "$new" ] && [ "$n" != "$new" ] && ip link set "$n" name "$new"
done
ip link set lo up
ip link set mgmt0 up && ip addr add 10.0.2.15/24 dev mgmt0 && ip route add default via 10.0.2.2
ip link set data0 up && [ -n "$addr" ] && ip addr add "$addr" dev data0
mkdir -p /run/sshd && /usr/sbin/sshd -E /run/sshd.log
echo "aifabric-init: $name ready (data0 $addr)" > /dev/console
while true; do wait; sleep 1; done
