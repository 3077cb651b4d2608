#!/usr/bin/env bash
# Start, wait for, and stop the two VM-lab guests (QEMU, TCG). Usage: vm.sh start|wait|stop|status
#   vm1, vm2: 1 vCPU, 1 GiB; q35 with a virtual IOMMU (listed before the other devices); NICs named by MAC:
#   mgmt0 (user networking, restrict=on, SSH forwarded to 127.0.0.1:$SSH_BASE+N only), data0 (a socket link between
#   the guests over 127.0.0.1), pass0 (an extra e1000e, alone in its IOMMU group, to hand to vfio-pci).
# Nothing is bridged to the host's interfaces. PIDs and console logs live in $CACHE/run.
set -euo pipefail
cache=${AIFABRIC_VMLAB_CACHE:-/var/cache/aifabric-vmlab}
ssh_base=${AIFABRIC_VMLAB_SSH_BASE:-22300}
data_port=${AIFABRIC_VMLAB_DATA_PORT:-22399}
boot_timeout=${AIFABRIC_VMLAB_BOOT_TIMEOUT:-180}
extra_append=${AIFABRIC_VMLAB_EXTRA_APPEND:-}   # for tests of a failed boot, e.g. init=/bin/false
run="$cache/run"
guests=(vm1 vm2)

ssh_to() {  # ssh_to N CMD...
  local n=$1; shift
  ssh -q -i "$cache/ssh/id_ed25519" -p $((ssh_base + n)) -o BatchMode=yes -o ConnectTimeout=3 \
    -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null root@127.0.0.1 "$@"
}

alive() { [ -e "$run/$1.pid" ] && kill -0 "$(cat "$run/$1.pid")" 2>/dev/null; }

start_guest() {
  local n=$1 name=vm$1 data
  if alive "$name"; then echo "vmlab: $name already running (pid $(cat "$run/$name.pid"))"; return; fi
  if [ "$n" = 1 ]; then data="listen=127.0.0.1:$data_port"; else data="connect=127.0.0.1:$data_port"; fi
  : > "$run/$name.console"
  qemu-system-x86_64 -name "aifabric-$name" -accel tcg -cpu max -smp 1 -m 1024 \
    -machine q35,kernel-irqchip=split -device intel-iommu,intremap=on,caching-mode=on \
    -kernel "$cache/vmlinuz" -initrd "$cache/initrd.img" \
    -append "root=/dev/vda rw console=ttyS0 init=/sbin/aifabric-init intel_iommu=on iommu=pt aifabric.name=$name aifabric.addr=198.18.100.$n/24 panic=5 $extra_append" \
    -no-reboot \
    -drive "file=$cache/image.raw,if=virtio,format=raw,snapshot=on" \
    -netdev "user,id=mgmt,restrict=on,hostfwd=tcp:127.0.0.1:$((ssh_base + n))-:22" \
    -device "virtio-net-pci,netdev=mgmt,mac=52:54:00:af:10:0$n" \
    -netdev "socket,id=data,$data" -device "virtio-net-pci,netdev=data,mac=52:54:00:af:00:0$n" \
    -netdev "user,id=pass,restrict=on" -device "e1000e,netdev=pass,mac=52:54:00:af:20:0$n" \
    -display none -serial "file:$run/$name.console" -monitor none \
    -daemonize -pidfile "$run/$name.pid"
  echo "vmlab: $name started (pid $(cat "$run/$name.pid"), ssh 127.0.0.1:$((ssh_base + n)))"
}

wait_guests() {
  local start=$SECONDS n
  for n in 1 2; do
    until ssh_to "$n" true 2>/dev/null; do
      if ! alive "vm$n"; then
        echo "vmlab: vm$n died while booting; its console ($run/vm$n.console) ends:"; tail -15 "$run/vm$n.console"; return 1
      fi
      if [ $((SECONDS - start)) -ge "$boot_timeout" ]; then
        echo "vmlab: vm$n did not answer SSH within ${boot_timeout}s; its console ($run/vm$n.console) ends:"
        tail -15 "$run/vm$n.console"; return 1
      fi
      sleep 1
    done
    echo "vmlab: vm$n answers SSH after $((SECONDS - start)) s"
  done
}

stop_guests() {
  local name pid
  for name in "${guests[@]}"; do
    [ -e "$run/$name.pid" ] || continue
    pid=$(cat "$run/$name.pid")
    if kill -0 "$pid" 2>/dev/null && grep -q "aifabric-$name" "/proc/$pid/cmdline" 2>/dev/null; then
      kill "$pid"
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
      kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
      echo "vmlab: $name stopped (pid $pid)"
    fi
    rm -f "$run/$name.pid"
  done
}

case "${1:-}" in
  start)
    [ -e "$cache/image.raw" ] || { echo "vmlab: no image in $cache; run lab/vm/build-image.sh first"; exit 1; }
    mkdir -p "$run"
    start_guest 1
    sleep 0.5  # vm1 listens on the data link; vm2 connects to it
    start_guest 2 ;;
  wait) wait_guests ;;
  stop) stop_guests ;;
  status) for name in "${guests[@]}"; do if alive "$name"; then echo "$name running"; else echo "$name stopped"; fi; done ;;
  *) echo "usage: $0 start|wait|stop|status"; exit 2 ;;
esac
