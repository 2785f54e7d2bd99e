#!/usr/bin/env bash
# Build every board ELF (release: --profile firmware) and print their flash
# and static RAM use, failing if one exceeds its board's budget or holds a
# floating-point instruction (the firmware has none: every VFP mnemonic
# starts with "v"). Flash = .boot2 (the Pico's second-stage boot loader) +
# .vector_table + .text + .rodata + .data (its load image) + .ram_text (the
# Pico's code, run from SRAM, its load image in flash); RAM = .ram_text +
# .ram_vectors (the Pico's copy of the vector table) + .data + .bss + .uninit
# (RTIC's resources). The stack takes the rest of RAM and is not in these
# figures.
#
# Budgets, per board (the book's internals/emulators.md footprint table says why):
# - nucleo-f411re and qemu: 64 KiB flash, 16 KiB RAM: room on the smallest
#   STM32F4 a user may port to, and what the design holds the firmware to.
# - rp2040-pico: its code runs from SRAM (memory/rp2040-pico.x) and so counts
#   twice, against flash (its load image) and RAM. The RP2040 has 264 KiB of
#   SRAM and the Pico 2 MiB of flash: 192 KiB of each, which leaves SRAM for
#   the stack and keeps the image a quick UF2 copy.
set -euo pipefail
cd "$(dirname "$0")/../.."

budget() {
    case "$1" in
        rp2040-pico) echo $((192 * 1024)) $((192 * 1024)) ;;
        *) echo $((64 * 1024)) $((16 * 1024)) ;;
    esac
}

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
printf '%-15s %10s %10s   %s\n' board "flash (B)" "RAM (B)" "budget (flash / RAM)"
for spec in thumbv7em-none-eabihf/nucleo-f411re thumbv7em-none-eabihf/qemu thumbv6m-none-eabi/rp2040-pico; do
    board=${spec#*/}
    elf="$target_dir/${spec%%/*}/firmware/$board"
    read -r flash ram < <("$llvm_size" -A "$elf" | awk '
        $1 == ".boot2" || $1 == ".vector_table" || $1 == ".text" || $1 == ".rodata" { flash += $2 }
        $1 == ".data" || $1 == ".ram_text" { flash += $2; ram += $2 }
        $1 == ".ram_vectors" { ram += $2 }
        $1 == ".bss" || $1 == ".uninit" { ram += $2 }
        END { print flash + 0, ram + 0 }')
    # KiB to one decimal, rounded to nearest.
    flash10=$(((flash * 10 + 512) / 1024))
    ram10=$(((ram * 10 + 512) / 1024))
    read -r flash_budget ram_budget < <(budget "$board")
    printf '%-15s %10d %10d   (%d.%d KiB flash, %d.%d KiB RAM; budget %d / %d KiB)\n' "$board" "$flash" "$ram" \
        $((flash10 / 10)) $((flash10 % 10)) $((ram10 / 10)) $((ram10 % 10)) \
        $((flash_budget / 1024)) $((ram_budget / 1024))
    if [ "$flash" -gt "$flash_budget" ] || [ "$ram" -gt "$ram_budget" ]; then
        echo "firmware-size: $board is over its budget of $flash_budget B flash / $ram_budget B RAM" >&2
        status=1
    fi
    vfp=$("$llvm_objdump" -d --no-show-raw-insn "$elf" | grep -cP '^\s+[0-9a-f]+:\s+v[a-z]' || true)
    if [ "$vfp" -ne 0 ]; then
        echo "firmware-size: $board holds $vfp floating-point instructions; the firmware must use none" >&2
        status=1
    fi
done
exit $status
