//! The USB serial number from the flash's unique ID, read once in `init`
//! as pico-sdk's `flash_get_unique_id` does (src/rp2_common/hardware_flash/
//! flash.c, `flash_do_cmd`): with interrupts off, the boot ROM's
//! `connect_internal_flash` and `flash_exit_xip` (RP2040 datasheet
//! §2.8.3.1.3) put the SSI in serial mode, the chip select is forced low
//! through IO_QSPI (§2.19.6.2), the Read Unique ID command goes through
//! XIP_SSI DR0 (§4.10.13), the chip select is released, and
//! `flash_flush_cache` and `flash_enter_cmd_xip` bring XIP back (serial 03h
//! reads: slow, but nothing runs from flash after the boot copy). The
//! formatting and the transfer loop are in `latprobe_firmware::board::pico::uid`.
//!
//! From `flash_exit_xip` to `flash_enter_cmd_xip` the flash cannot be read:
//! every instruction and constant used meanwhile must be in SRAM. The whole
//! image but the reset path is (memory/rp2040-pico.x, ram.rs), this file's
//! code and rp2040-hal's `rom_data` wrappers included (`.text` goes to
//! `.ram_text`); the ROM functions are reached through the ROM's own table,
//! not through flash.

use latprobe_firmware::board::pico::uid::{self, SsiFifo, RUID_TOTAL_BYTES, SERIAL_LEN};
use rp2040_hal::{pac, rom_data};

/// The 16 hex digits of this Pico's flash unique ID, written into `buf`.
pub fn serial_number(buf: &'static mut [u8; SERIAL_LEN]) -> &'static str {
    let tx = uid::ruid_command();
    let mut rx = [0u8; RUID_TOTAL_BYTES];
    // pico-sdk's flash_do_cmd: no interrupt handler may run (and fetch
    // from flash) while XIP is off.
    cortex_m::interrupt::free(|_| {
        // SAFETY: interrupts are off and core 1 is parked in the boot ROM
        // (never launched; §2.8.2, "Launching Code On Processor Core 1"),
        // so nothing runs from flash or touches the SSI and IO_QSPI
        // meanwhile; the code and data used are in SRAM (above), as
        // §2.8.3.1.3 requires while XIP is off.
        unsafe { flash_do_cmd(&tx, &mut rx) }
    });
    uid::hex_upper(&uid::id_from_response(&rx), buf)
}

/// One serial command through the XIP SSI, as pico-sdk's
/// `flash_do_cmd_internal` (with `flash_enter_cmd_xip` for its boot2 re-entry).
///
/// # Safety
/// Interrupts off, no other core running, and nothing this calls in flash.
#[inline(never)]
unsafe fn flash_do_cmd(tx: &[u8], rx: &mut [u8]) {
    // SAFETY (each ROM call): §2.8.3.1.3's flash functions take no
    // arguments; rp2040-hal looks each up through the ROM's table
    // (rom_table_lookup at 0x18, the function table at 0x14, §2.8.3).
    // `connect_internal_flash` muxes the QSPI pads to the SSI; `flash_exit_xip`
    // leaves the flash in serial command mode and the SSI in 8-bit
    // TX_AND_RX frames at SCK = clk_sys / 6.
    unsafe {
        rom_data::connect_internal_flash();
        rom_data::flash_exit_xip();
    }
    cs_force(false);
    uid::transfer(&mut Ssi, tx, rx);
    cs_force(true);
    // SAFETY: as above; `flash_flush_cache` flushes the XIP cache and returns
    // the chip select to the SSI, `flash_enter_cmd_xip` sets the SSI for
    // serial 03h XIP reads (§2.8.3.1.3).
    unsafe {
        rom_data::flash_flush_cache();
        rom_data::flash_enter_cmd_xip();
    }
}

/// pico-sdk's `flash_cs_force`: IO_QSPI GPIO_QSPI_SS_CTRL OUTOVER (§2.19.6.2:
/// 2 drive low, 3 drive high) holds the chip select for the whole command,
/// which the SSI alone would release whenever its TX FIFO runs empty.
fn cs_force(high: bool) {
    // SAFETY: IO_QSPI's block at its fixed address (§2.19.6.2); in
    // `flash_do_cmd`, with interrupts off, so this read-modify-write of
    // SS_CTRL is the only access; OUTOVER's values are the field's
    // enumerated ones.
    let io = unsafe { &*pac::IO_QSPI::ptr() };
    io.gpio_qspiss().gpio_ctrl().modify(|_, w| if high { w.outover().high() } else { w.outover().low() });
}

/// XIP_SSI's FIFOs in serial mode (§4.10.13 SR, DR0).
struct Ssi;

impl Ssi {
    fn regs() -> &'static pac::xip_ssi::RegisterBlock {
        // SAFETY: XIP_SSI's block at its fixed address (§4.10.13), used only
        // inside `flash_do_cmd` with interrupts off, after `flash_exit_xip`
        // put it in serial mode.
        unsafe { &*pac::XIP_SSI::ptr() }
    }
}

impl SsiFifo for Ssi {
    fn tx_not_full(&mut self) -> bool {
        Self::regs().sr().read().tfnf().bit_is_set()
    }
    fn rx_not_empty(&mut self) -> bool {
        Self::regs().sr().read().rfne().bit_is_set()
    }
    fn write(&mut self, byte: u8) {
        // SAFETY: DR0 takes any 32-bit value (§4.10.13); with 8-bit frames
        // (CTRLR0.DFS_32 7) the low byte is sent.
        Self::regs().dr0().write(|w| unsafe { w.bits(u32::from(byte)) });
    }
    fn read(&mut self) -> u8 {
        // With 8-bit frames the byte is DR0's low 8 bits.
        (Self::regs().dr0().read().bits() & 0xff) as u8
    }
}
