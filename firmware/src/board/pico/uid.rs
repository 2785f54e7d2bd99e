//! The Pico's USB serial number: the flash chip's 64-bit unique ID, read
//! as pico-sdk's `flash_get_unique_id` reads it (src/rp2_common/
//! hardware_flash/flash.c: the Read Unique ID command 0x4B, 4 dummy bytes,
//! then 8 ID bytes, through the XIP SSI in serial mode, RP2040 datasheet
//! §4.10) and written as `pico_get_unique_board_id_string` writes it: 16
//! upper-case hex digits, the first byte read first. Every Pico's flash
//! has its own ID (W25Q16JV §8.2.31), so two probes get two
//! `/dev/serial/by-id` paths.
//!
//! The binary (bin/rp2040-pico/uid.rs) owns the registers and the boot ROM
//! calls; this module has the command, the transfer loop over a small
//! [`SsiFifo`] seam, and the formatting, host-tested.

/// Read Unique ID (W25Q16JV §8.2.31; pico-sdk `FLASH_RUID_CMD`).
pub const RUID_CMD: u8 = 0x4b;
/// Dummy bytes between the command and the ID (pico-sdk `FLASH_RUID_DUMMY_BYTES`).
pub const RUID_DUMMY_BYTES: usize = 4;
/// The ID's length (pico-sdk `FLASH_RUID_DATA_BYTES`).
pub const UID_BYTES: usize = 8;
/// Bytes in one transfer: command, dummies, ID (pico-sdk `FLASH_RUID_TOTAL_BYTES`).
pub const RUID_TOTAL_BYTES: usize = 1 + RUID_DUMMY_BYTES + UID_BYTES;
/// The serial number's length: two hex digits a byte.
pub const SERIAL_LEN: usize = 2 * UID_BYTES;
/// At most this many bytes written and not yet read back: the RX FIFO is
/// 16 deep and the SSI holds up to two more inside (pico-sdk's and the boot
/// ROM's `max_in_flight = 16 - 2`), so an interrupted loop never overflows it.
pub const MAX_IN_FLIGHT: usize = 16 - 2;

/// The XIP SSI's data path in serial mode (datasheet §4.10.13: SR.TFNF,
/// SR.RFNE, DR0), as the transfer loop needs it.
pub trait SsiFifo {
    /// SR.TFNF: the TX FIFO has room.
    fn tx_not_full(&mut self) -> bool;
    /// SR.RFNE: a byte waits in the RX FIFO.
    fn rx_not_empty(&mut self) -> bool;
    /// One frame into DR0.
    fn write(&mut self, byte: u8);
    /// One frame out of DR0 (only after `rx_not_empty`).
    fn read(&mut self) -> u8;
}

/// The bytes to send: the command, then zeros while the flash answers.
pub const fn ruid_command() -> [u8; RUID_TOTAL_BYTES] {
    let mut tx = [0u8; RUID_TOTAL_BYTES];
    tx[0] = RUID_CMD;
    tx
}

/// pico-sdk's `flash_do_cmd_internal` loop, with the chip select already
/// forced low: each byte of `tx` out, each answer into `rx`, never more
/// than [`MAX_IN_FLIGHT`] unread. Returns when every answer is in.
pub fn transfer<S: SsiFifo>(ssi: &mut S, tx: &[u8], rx: &mut [u8]) {
    let count = tx.len().min(rx.len());
    let (mut sent, mut got) = (0, 0);
    while sent < count || got < count {
        let can_put = ssi.tx_not_full();
        let can_get = ssi.rx_not_empty();
        if can_put && sent < count && sent - got < MAX_IN_FLIGHT {
            ssi.write(tx[sent]);
            sent += 1;
        }
        if can_get && got < count {
            rx[got] = ssi.read();
            got += 1;
        }
    }
}

/// The ID from the bytes read back (after the command and the dummies).
pub fn id_from_response(rx: &[u8; RUID_TOTAL_BYTES]) -> [u8; UID_BYTES] {
    let mut id = [0u8; UID_BYTES];
    id.copy_from_slice(&rx[1 + RUID_DUMMY_BYTES..]);
    id
}

/// `pico_get_unique_board_id_string`'s format into `out`: 16 upper-case hex
/// digits, `id[0]` first, its high nibble first.
pub fn hex_upper<'a>(id: &[u8; UID_BYTES], out: &'a mut [u8; SERIAL_LEN]) -> &'a str {
    const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
    for (i, byte) in id.iter().enumerate() {
        out[2 * i] = DIGITS[usize::from(byte >> 4)];
        out[2 * i + 1] = DIGITS[usize::from(byte & 0xf)];
    }
    // Every byte is an ASCII digit or letter: valid UTF-8, never the default.
    core::str::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;
    use std::vec::Vec;

    /// An SSI whose byte takes `shift` polls on the wire, answering from a
    /// flash that sends `answer` after the command and the dummies.
    struct FakeSsi {
        shift: u32,
        wire: VecDeque<(u32, u8)>,
        rx: VecDeque<u8>,
        sent: Vec<u8>,
        answer: [u8; UID_BYTES],
        max_unread: usize,
        polls: u32,
    }

    impl FakeSsi {
        fn new(shift: u32, answer: [u8; UID_BYTES]) -> Self {
            Self {
                shift,
                wire: VecDeque::new(),
                rx: VecDeque::new(),
                sent: Vec::new(),
                answer,
                max_unread: 0,
                polls: 0,
            }
        }
        fn tick(&mut self) {
            self.polls += 1;
            while let Some(&(done, byte)) = self.wire.front() {
                if done > self.polls {
                    break;
                }
                self.wire.pop_front();
                assert!(self.rx.len() < 16, "RX FIFO overflow");
                self.rx.push_back(byte);
            }
        }
    }

    impl SsiFifo for FakeSsi {
        fn tx_not_full(&mut self) -> bool {
            self.tick();
            self.wire.len() < 16
        }
        fn rx_not_empty(&mut self) -> bool {
            self.tick();
            !self.rx.is_empty()
        }
        fn write(&mut self, byte: u8) {
            let i = self.sent.len();
            self.sent.push(byte);
            let at = i.wrapping_sub(1 + RUID_DUMMY_BYTES);
            let answer = if at < UID_BYTES { self.answer[at] } else { 0xff };
            let start = self.wire.back().map_or(self.polls, |&(done, _)| done.max(self.polls));
            self.wire.push_back((start + self.shift, answer));
            self.max_unread = self.max_unread.max(self.wire.len() + self.rx.len());
        }
        fn read(&mut self) -> u8 {
            self.rx.pop_front().expect("DR0 read with the RX FIFO empty")
        }
    }

    const ID: [u8; UID_BYTES] = [0xe6, 0x61, 0x4c, 0x31, 0x1b, 0x2a, 0x3d, 0x21];

    #[test]
    fn the_transfer_sends_the_command_and_reads_the_id_whatever_the_byte_time() {
        for shift in [0, 1, 5, 48] {
            let mut ssi = FakeSsi::new(shift, ID);
            let mut rx = [0u8; RUID_TOTAL_BYTES];
            transfer(&mut ssi, &ruid_command(), &mut rx);
            assert_eq!(ssi.sent, [0x4b, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], "shift {shift}");
            assert_eq!(id_from_response(&rx), ID, "shift {shift}");
            assert!(ssi.max_unread <= MAX_IN_FLIGHT, "shift {shift}: {} in flight", ssi.max_unread);
        }
    }

    #[test]
    fn a_long_transfer_keeps_at_most_fourteen_bytes_unread() {
        let mut ssi = FakeSsi::new(3, ID);
        let tx = [0u8; 64];
        let mut rx = [0u8; 64];
        transfer(&mut ssi, &tx, &mut rx);
        assert_eq!(ssi.sent.len(), 64);
        assert_eq!(ssi.max_unread, MAX_IN_FLIGHT);
    }

    #[test]
    fn the_serial_number_is_pico_sdks_sixteen_upper_case_hex_digits_first_byte_first() {
        let mut out = [0u8; SERIAL_LEN];
        assert_eq!(hex_upper(&ID, &mut out), "E6614C311B2A3D21");
        assert_eq!(
            hex_upper(&[0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef], &mut out),
            "0123456789ABCDEF"
        );
        assert_eq!(hex_upper(&[0; UID_BYTES], &mut out), "0000000000000000");
    }
}
