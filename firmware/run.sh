#!/usr/bin/env bash
# Cargo's runner for the probe target (.cargo/config.toml): `cargo run-qemu`
# and `cargo run-nucleo` end here with the ELF's path. The board is told by
# the ELF's name.
#
#   nucleo-f411re  probe-rs flashes it and prints the defmt log over RTT.
#   qemu           qemu-system-arm (Debian 12's 7.2: QEMU 10 crashes on the
#                  HAL's RCC reset writes) with both UARTs on unix sockets;
#                  the defmt log (semihosting, on stdout) goes through
#                  defmt-print when it is installed, else to a file.
set -euo pipefail

elf=$1
shift

case "$(basename "$elf")" in
nucleo-f411re*)
    command -v probe-rs >/dev/null || {
        echo "run.sh: probe-rs not found: cargo install probe-rs-tools --locked" >&2
        exit 2
    }
    exec probe-rs run --chip STM32F411RETx "$elf" "$@"
    ;;
qemu*)
    command -v qemu-system-arm >/dev/null || {
        echo "run.sh: qemu-system-arm not found: install it: apt-get install qemu-system-arm socat" >&2
        exit 2
    }
    dir=${LATPROBE_QEMU_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/latprobe-qemu.XXXXXX")}
    mkdir -p "$dir"
    cat >&2 <<MSG
qemu: QEMU waits for both sockets, the target line's first:
  target line (USART2): socat pty,link=$dir/target.pty,rawer unix-connect:$dir/target.sock &
                        latprobe-responder uart --device $dir/target.pty
  host link   (USART1): latprobe run --port unix:$dir/host.sock --mode uart-echo --count 1000
MSG
    # The target line's chardev comes first so QEMU waits for it before the
    # host link's: the responder is in place before the host can start a run.
    # -icount shift=0: virtual time runs at one instruction per ns,
    # deterministic.
    qemu=(timeout --kill-after=5 "${LATPROBE_QEMU_TIMEOUT:-3600}"
        qemu-system-arm -machine netduinoplus2 -display none -monitor none
        -icount shift=0 -semihosting-config enable=on,target=native
        -chardev "socket,id=target,path=$dir/target.sock,server=on,wait=on"
        -chardev "socket,id=host,path=$dir/host.sock,server=on,wait=on"
        -serial chardev:host -serial chardev:target
        -kernel "$elf" "$@")
    if command -v defmt-print >/dev/null; then
        "${qemu[@]}" | defmt-print -e "$elf"
    else
        echo "qemu: defmt log to $dir/defmt.bin (cargo install defmt-print to see it live)" >&2
        exec "${qemu[@]}" >"$dir/defmt.bin"
    fi
    ;;
*)
    echo "run.sh: no runner for $(basename "$elf"): expected the nucleo-f411re or qemu ELF" >&2
    exit 2
    ;;
esac
