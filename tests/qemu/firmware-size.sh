#!/usr/bin/env bash
# Build every board ELF (release: --profile firmware) and print their flash
# and static RAM use, failing if one exceeds the budget (64 KiB flash,
# 16 KiB RAM) or holds a floating-point instruction (the firmware has none:
# every VFP mnemonic starts with "v"). Flash = .boot2 (the Pico's second-stage
# boot loader) + .vector_table + .text + .rodata + .data (its load image); RAM = .data + .bss + .uninit (RTIC's resources). The stack takes
# the rest of RAM and is not in these figures.
set -euo pipefail
cd "$(dirname "$0")/../.."

FLASH_BUDGET=$((64 * 1024))
RAM_BUDGET=$((16 * 1024))

llvm_size="$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin/llvm-size"
llvm_objdump="$(dirname "$llvm_size")/llvm-objdump"
[ -x "$llvm_size" ] && [ -x "$llvm_objdump" ] || {
    echo "firmware-size: llvm-size not found: rustup component add llvm-tools" >&2
    exit 2
}

cargo fw-qemu -q
cargo fw-nucleo -q
cargo fw-pico -q
target_dir=$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')

status=0
printf '%-15s %10s %10s\n' board "flash (B)" "RAM (B)"
for spec in thumbv7em-none-eabihf/nucleo-f411re thumbv7em-none-eabihf/qemu thumbv6m-none-eabi/rp2040-pico; do
    board=${spec#*/}
    elf="$target_dir/${spec%%/*}/firmware/$board"
    read -r flash ram < <("$llvm_size" -A "$elf" | awk '
        $1 == ".boot2" || $1 == ".vector_table" || $1 == ".text" || $1 == ".rodata" { flash += $2 }
        $1 == ".data" { flash += $2; ram += $2 }
        $1 == ".bss" || $1 == ".uninit" { ram += $2 }
        END { print flash + 0, ram + 0 }')
    # KiB to one decimal, rounded to nearest.
    flash10=$(((flash * 10 + 512) / 1024))
    ram10=$(((ram * 10 + 512) / 1024))
    printf '%-15s %10d %10d   (%d.%d KiB flash, %d.%d KiB RAM)\n' "$board" "$flash" "$ram" \
        $((flash10 / 10)) $((flash10 % 10)) $((ram10 / 10)) $((ram10 % 10))
    if [ "$flash" -gt "$FLASH_BUDGET" ] || [ "$ram" -gt "$RAM_BUDGET" ]; then
        echo "firmware-size: $board is over the budget of $FLASH_BUDGET B flash / $RAM_BUDGET B RAM" >&2
        status=1
    fi
    vfp=$("$llvm_objdump" -d --no-show-raw-insn "$elf" | grep -cP '^\s+[0-9a-f]+:\s+v[a-z]' || true)
    if [ "$vfp" -ne 0 ]; then
        echo "firmware-size: $board holds $vfp floating-point instructions; the firmware must use none" >&2
        status=1
    fi
done
exit $status
