//! The Pico's [`PioBus`]: PIO0, IO_BANK0, SIO, TIMER and UART1 through the
//! rp2040-pac (field names from Raspberry Pi's SVD), and the set-up that
//! loads `board::pico::program` and starts the four state machines in one
//! write. References are to the RP2040 datasheet.

use core::sync::atomic::{AtomicU32, Ordering};
use latprobe_firmware::board::pico::program::{
    self, jmp_always, mov, set_pindirs, stimulus_target, trigger_sync_x, MovDst, MovSrc, CLOCK_WRAP,
    EDGES_WRAP, PULL_BLOCK, STIMULUS_AT, STIMULUS_FLAG, STIMULUS_WRAP, TRIGGER_FLAG, TRIGGER_SYNC_WRAP,
};
use latprobe_firmware::board::pico::trigger::sync_lag;
use latprobe_firmware::board::pico::{edges::EdgeFifo, OutOver, PioBus, Sm};
use rp2040_hal::pac;

/// The stimulus pin (PIO0 output).
pub const STIMULUS_PIN: u8 = 2;
/// The response line's GPIO pin (input).
pub const RESPONSE_PIN: u8 = 3;
/// UART1 TX (to the target's RX), also watched by SM2.
pub const TX_PIN: u8 = 4;
/// UART1 RX (from the target's TX), watched by SM1 in UART runs.
pub const RX_PIN: u8 = 5;
/// The trigger output (PIO1 SM0; Pico header pin 9).
pub const TRIGGER_PIN: u8 = 6;
/// The pin of the boot-time sync edge between PIO0 and PIO1: the on-board
/// LED, which no wire leaves (PIO0 drives it for 3 µs at boot, then it is
/// the LED again).
pub const SYNC_PIN: u8 = 25;

/// The registers, by the PAC's pointers. Holds nothing: every access is
/// one volatile read or write of a register the timer owns (PIO0, the
/// stimulus pin's GPIO control, TIMER's ALARM0, UART1's data register).
#[derive(Debug)]
pub struct Regs;

fn pio() -> &'static pac::pio0::RegisterBlock {
    // SAFETY: PIO0's register block is at a fixed address for the life of
    // the program; the timer is its only user after `start` (the HAL's PIO
    // driver is never created), and every access below is a single
    // volatile register access, as the PAC does it.
    unsafe { &*pac::PIO0::ptr() }
}

fn pio1() -> &'static pac::pio0::RegisterBlock {
    // SAFETY: PIO1's register block (the PAC derives it from PIO0's: the
    // same layout, datasheet §3.7), at a fixed address; the trigger is its
    // only user (the HAL's PIO driver is never created), and every access
    // is a single volatile register access.
    unsafe { &*pac::PIO1::ptr() }
}

fn io() -> &'static pac::io_bank0::RegisterBlock {
    // SAFETY: as for PIO0; only GPIO2's and GPIO6's CTRL (GPIO25's during
    // the boot-time sync) and the STATUS registers (read-only) are touched
    // here; GPIO2 belongs to PIO0 alone, GPIO6 to PIO1 alone.
    unsafe { &*pac::IO_BANK0::ptr() }
}

fn timer() -> &'static pac::timer::RegisterBlock {
    // SAFETY: as for PIO0; ALARM0, INTR/INTE bit 0 and TIMERAWL are used by
    // this timer alone (the HAL's Timer is never created).
    unsafe { &*pac::TIMER::ptr() }
}

impl PioBus for Regs {
    fn rx(&mut self, sm: Sm) -> Option<u32> {
        let p = pio();
        if p.fstat().read().rxempty().bits() & (1 << sm as u8) != 0 {
            None
        } else {
            Some(p.rxf(sm as usize).read().bits())
        }
    }

    fn pop(&mut self, sm: Sm) -> u32 {
        pio().rxf(sm as usize).read().bits()
    }

    fn rx_level(&mut self, sm: Sm) -> u8 {
        // FLEVEL: 4 bits a FIFO, TXn at 8n and RXn at 8n + 4 (§3.7).
        ((pio().flevel().read().bits() >> (8 * sm as u32 + 4)) & 0xf) as u8
    }

    fn tx(&mut self, sm: Sm, word: u32) -> bool {
        let p = pio();
        if p.fstat().read().txfull().bits() & (1 << sm as u8) != 0 {
            return false;
        }
        // SAFETY: TXFn takes any 32-bit word.
        p.txf(sm as usize).write(|w| unsafe { w.bits(word) });
        true
    }

    fn tx_empty(&mut self, sm: Sm) -> bool {
        pio().fstat().read().txempty().bits() & (1 << sm as u8) != 0
    }

    fn take_rx_stall(&mut self, sm: Sm) -> bool {
        let p = pio();
        let bit = 1u8 << sm as u8;
        if p.fdebug().read().rxstall().bits() & bit == 0 {
            return false;
        }
        // SAFETY: FDEBUG is write-1-to-clear; only this bit is written.
        p.fdebug().write(|w| unsafe { w.rxstall().bits(bit) });
        true
    }

    fn addr(&mut self, sm: Sm) -> u8 {
        pio().sm(sm as usize).sm_addr().read().bits() as u8
    }

    fn exec(&mut self, sm: Sm, instr: u16) {
        // SAFETY: SMx_INSTR takes any 16-bit instruction; a write executes
        // it at once on that running state machine, in place of the one at
        // its program counter, which does not advance unless the
        // instruction is a jump (§3.5.7; rp2040-hal's `exec_instruction`
        // writes the same register). The timer forces only `pull noblock`
        // and `mov y, osr` on SM3, which touch its own OSR, Y and TX FIFO.
        pio().sm(sm as usize).sm_instr().write(|w| unsafe { w.sm0_instr().bits(instr) });
    }

    fn take_flag(&mut self, n: u8) -> bool {
        let p = pio();
        if p.irq().read().bits() & (1 << n) == 0 {
            return false;
        }
        // SAFETY: IRQ is write-1-to-clear (§3.7); only flag n is written.
        p.irq().write(|w| unsafe { w.bits(1 << n) });
        true
    }

    fn flag(&mut self, n: u8) -> bool {
        pio().irq().read().bits() & (1 << n) != 0
    }

    fn flag_irq(&mut self, n: u8, on: bool) {
        // IRQ0_INTE: SMn (the PIO IRQ flags 0..3) at bits 8..11 (§3.7).
        let bit = 1 << (8 + u32::from(n));
        // SAFETY: only bit 8 + n changes; the others are written as read.
        pio()
            .sm_irq(0)
            .irq_inte()
            .modify(|r, w| unsafe { w.bits(if on { r.bits() | bit } else { r.bits() & !bit }) });
    }

    fn set_outover(&mut self, mode: OutOver) {
        io().gpio(STIMULUS_PIN as usize).gpio_ctrl().modify(|_, w| match mode {
            OutOver::Normal => w.outover().normal(),
            OutOver::Invert => w.outover().invert(),
            OutOver::Low => w.outover().low(),
            OutOver::High => w.outover().high(),
        });
    }

    fn stimulus_from_pio(&mut self) -> bool {
        io().gpio(STIMULUS_PIN as usize).gpio_status().read().outfromperi().bit_is_set()
    }

    fn stimulus_at_pad(&mut self) -> bool {
        io().gpio(STIMULUS_PIN as usize).gpio_status().read().outtopad().bit_is_set()
    }

    fn response_level(&mut self) -> bool {
        let pin = pio().sm(Sm::Response as usize).sm_execctrl().read().jmp_pin().bits();
        io().gpio(pin as usize).gpio_status().read().infrompad().bit_is_set()
    }

    fn response_pin(&mut self, uart: bool) {
        let pin = if uart { RX_PIN } else { RESPONSE_PIN };
        // SAFETY: JMP_PIN takes any GPIO number 0..=29; the other fields
        // are kept. PIO1 SM1 (the trigger's disarm) watches the same pin.
        pio().sm(Sm::Response as usize).sm_execctrl().modify(|_, w| unsafe { w.jmp_pin().bits(pin) });
        pio1().sm(1).sm_execctrl().modify(|_, w| unsafe { w.jmp_pin().bits(pin) });
    }

    fn micros(&mut self) -> u32 {
        timer().timerawl().read().bits()
    }

    fn set_alarm(&mut self, at: u32) {
        // SAFETY: any value arms ALARM0 for that TIMERAWL (§4.6.4).
        timer().alarm0().write(|w| unsafe { w.bits(at) });
    }

    fn take_alarm(&mut self) -> bool {
        let t = timer();
        if t.intr().read().alarm_0().bit_is_clear() {
            return false;
        }
        t.intr().write(|w| w.alarm_0().clear_bit_by_one());
        true
    }

    fn alarm_fired(&mut self) -> bool {
        timer().intr().read().alarm_0().bit_is_set()
    }

    fn alarm_irq(&mut self, on: bool) {
        timer().inte().modify(|_, w| w.alarm_0().bit(on));
    }

    fn uart_write(&mut self, byte: u8) -> bool {
        // SAFETY: UART1's registers, used for writes by this timer alone
        // (the HAL's Writer half is dropped); a DR write of one byte.
        let u = unsafe { &*pac::UART1::ptr() };
        if u.uartfr().read().txff().bit_is_set() {
            return false;
        }
        u.uartdr().write(|w| unsafe { w.data().bits(byte) });
        true
    }

    fn trigger_lag(&mut self) -> u32 {
        TRIGGER_LAG.load(Ordering::Relaxed)
    }

    fn trigger_tx(&mut self, word: u32) -> bool {
        let p = pio1();
        if p.fstat().read().txfull().bits() & 1 != 0 {
            return false;
        }
        // SAFETY: TXF0 takes any 32-bit word (§3.7).
        p.txf(0).write(|w| unsafe { w.bits(word) });
        true
    }

    fn take_trigger_flag(&mut self) -> bool {
        let p = pio1();
        if p.irq().read().bits() & (1 << TRIGGER_FLAG) == 0 {
            return false;
        }
        // SAFETY: IRQ is write-1-to-clear (§3.7); only the trigger's flag.
        p.irq().write(|w| unsafe { w.bits(1 << TRIGGER_FLAG) });
        true
    }

    fn trigger_flag(&mut self) -> bool {
        pio1().irq().read().bits() & (1 << TRIGGER_FLAG) != 0
    }

    fn trigger_flag_irq(&mut self, on: bool) {
        // IRQ0_INTE: SMn (the PIO IRQ flags 0..3) at bits 8..11 (§3.7).
        let bit = 1 << (8 + u32::from(TRIGGER_FLAG));
        // SAFETY: only that bit changes; the others are written as read.
        pio1()
            .sm_irq(0)
            .irq_inte()
            .modify(|r, w| unsafe { w.bits(if on { r.bits() | bit } else { r.bits() & !bit }) });
    }

    fn set_trigger_outover(&mut self, mode: OutOver) {
        io().gpio(TRIGGER_PIN as usize).gpio_ctrl().modify(|_, w| match mode {
            OutOver::Normal => w.outover().normal(),
            OutOver::Invert => w.outover().invert(),
            OutOver::Low => w.outover().low(),
            OutOver::High => w.outover().high(),
        });
    }

    fn trigger_from_pio(&mut self) -> bool {
        io().gpio(TRIGGER_PIN as usize).gpio_status().read().outfromperi().bit_is_set()
    }

    fn trigger_at_pad(&mut self) -> bool {
        // OUTTOPAD is the level offered to the pad; OETOPAD whether it is
        // driven (PIO1 SM1's disarm clears it): undriven, the pull-down.
        let st = io().gpio(TRIGGER_PIN as usize).gpio_status().read();
        st.outtopad().bit_is_set() && st.oetopad().bit_is_set()
    }

    fn trigger_watch(&mut self, by_response: bool) {
        let r = pio1().sm(1);
        // SAFETY: SMx_INSTR takes a 16-bit instruction and runs it at once,
        // then the state machine goes on from there (§3.5.7); SM1 keeps no
        // count, so the extra instruction costs it nothing. Its SET_BASE
        // is the trigger pin (`start_trigger`).
        let exec = |instr: u16| r.sm_instr().write(|w| unsafe { w.sm0_instr().bits(instr) });
        if by_response {
            exec(jmp_always(program::WATCH_ARM));
        } else {
            exec(jmp_always(program::WATCH_PARK));
            exec(set_pindirs(1));
        }
    }
}

/// Load the programs and start the state machines in step (§3.5.6: every
/// state machine enabled in one CTRL write, with their clock dividers
/// restarted together). Returns the levels the edge state machines started
/// from (response, TX pin).
pub fn start(resets: &pac::RESETS) -> (bool, bool) {
    // §2.14: PIO0 out of reset, then wait for it.
    resets.reset().modify(|_, w| w.pio0().clear_bit());
    while resets.reset_done().read().pio0().bit_is_clear() {}
    let p = pio();
    for (i, word) in program::image().iter().enumerate() {
        // SAFETY: INSTR_MEMn takes a 16-bit instruction.
        p.instr_mem(i).write(|w| unsafe { w.bits(u32::from(*word)) });
    }
    let level = |pin: u8| io().gpio(pin as usize).gpio_status().read().infrompad().bit_is_set();
    let (resp_high, tx_high) = (level(RESPONSE_PIN), level(TX_PIN));
    // (state machine, wrap, JMP_PIN, join RX, entry)
    type Setup = (Sm, (u8, u8), u8, bool, u8);
    let setups: [Setup; 4] = [
        (Sm::Clock, CLOCK_WRAP, 0, false, program::CLOCK_AT),
        (Sm::Response, EDGES_WRAP, RESPONSE_PIN, true, EdgeFifo::entry_for(resp_high)),
        (Sm::TxStart, EDGES_WRAP, TX_PIN, true, EdgeFifo::entry_for(tx_high)),
        (Sm::Stimulus, STIMULUS_WRAP, 0, false, STIMULUS_AT),
    ];
    // Restart every state machine (shift counters, stalls) while disabled.
    // SAFETY: CTRL's SM_RESTART bits are self-clearing strobes.
    p.ctrl().write(|w| unsafe { w.sm_restart().bits(0xf) });
    for (sm, (bottom, top), jmp_pin, join_rx, entry) in setups {
        let r = p.sm(sm as usize);
        // SAFETY (every write below): each field is written within its
        // width, from the datasheet's SMx_* register tables (§3.7).
        // Divider 1.0: one instruction a system clock.
        r.sm_clkdiv().write(|w| unsafe { w.int().bits(1).frac().bits(0) });
        r.sm_execctrl().write(|w| unsafe {
            w.wrap_bottom()
                .bits(bottom)
                .wrap_top()
                .bits(top)
                .jmp_pin()
                .bits(jmp_pin)
                .status_sel()
                .txlevel()
                .status_n()
                .bits(1)
        });
        // The edge channels join their FIFOs: 8 words of RX.
        r.sm_shiftctrl().write(|w| w.fjoin_rx().bit(join_rx));
        if sm == Sm::Stimulus {
            r.sm_pinctrl().write(|w| unsafe {
                w.out_base()
                    .bits(STIMULUS_PIN)
                    .out_count()
                    .bits(1)
                    .set_base()
                    .bits(STIMULUS_PIN)
                    .set_count()
                    .bits(1)
            });
        } else {
            r.sm_pinctrl().write(|w| unsafe { w.out_count().bits(0).set_count().bits(0) });
        }
        let exec = |instr: u16| r.sm_instr().write(|w| unsafe { w.sm0_instr().bits(instr) });
        exec(mov(MovDst::X, true, MovSrc::Null));
        exec(mov(MovDst::Isr, false, MovSrc::Null));
        if sm == Sm::Stimulus {
            exec(set_pindirs(1));
            // The sync pin too (`start_trigger`): PIO0's output enable of a
            // pin is set by SET PINDIRS (§3.4.10), and an instruction
            // executed while the state machines run would cost SM3 a
            // clock, so it is set now, while they are disabled.
            // SAFETY: SET_BASE takes any GPIO number 0..=31.
            r.sm_pinctrl().modify(|_, w| unsafe { w.set_base().bits(SYNC_PIN) });
            exec(set_pindirs(1));
            r.sm_pinctrl().modify(|_, w| unsafe { w.set_base().bits(STIMULUS_PIN) });
        }
        exec(jmp_always(entry));
    }
    // The capture channels' words wake the top-priority handler.
    p.sm_irq(0).irq_inte().write(|w| w.sm1_rxnempty().set_bit().sm2_rxnempty().set_bit());
    // SAFETY: enable all four and restart their dividers in one write.
    p.ctrl().write(|w| unsafe { w.sm_enable().bits(0xf).clkdiv_restart().bits(0xf) });
    (resp_high, tx_high)
}

/// Polls of a flag or FIFO during the sync before giving up (each a few
/// clocks; the sync edge comes 32 µs after its target is pushed).
const SYNC_POLLS: u32 = 100_000;
/// The width of the boot-time pulses on the sync pin, in ticks (3.2 µs).
const SYNC_WIDTH: u32 = 200;

/// PIO1's count's lag behind PIO0's, in ticks (wrapping), as
/// [`start_trigger`] measured it; read by [`PioBus::trigger_lag`].
static TRIGGER_LAG: AtomicU32 = AtomicU32::new(0);

/// PIO1 out of reset with the trigger program, its state machine SM0
/// synchronised to PIO0's count by one edge (`program::TRIGGER_SYNC`), its
/// lag behind PIO0 measured, and left comparing: the trigger compare of
/// `board::pico::PioTimer`. Call it after [`start`], before anything else
/// uses PIO0 (and before the UART sends: PIO0 SM2 watches the sync pin
/// for the measurement). Returns whether the sync held (else the board
/// announces no trigger).
///
/// The sync: PIO1 SM0 waits in a one-instruction loop for GPIO25 high, X
/// preloaded with PIO0's count for the instant it enters the stimulus
/// program; PIO0's stimulus state machine, its OUT pin moved to GPIO25
/// (IO_BANK0 FUNCSEL 6, PIO0) for the time, raises GPIO25 at a target and
/// lowers it again (two toggles: its level, kept in ISR, is back where
/// GPIO2's is). PIO1 reads GPIO25 through its 2-flop input synchroniser
/// (§3.5.6.3; not INPUT_SYNC_BYPASS: a pad read in the clock it moves can
/// go metastable and land a clock or two late, from boot to boot), which
/// `program::trigger_sync_x` counts in. What a slow pad adds is measured
/// ([`measure_trigger_lag`]): whole ticks are corrected by the timer, and
/// an odd number of clocks leaves half a tick, 8 ns (docs/dev/trigger.md).
pub fn start_trigger(resets: &pac::RESETS) -> bool {
    // §2.14: PIO1 out of reset, then wait for it.
    resets.reset().modify(|_, w| w.pio1().clear_bit());
    while resets.reset_done().read().pio1().bit_is_clear() {}
    let p1 = pio1();
    for (i, word) in program::trigger_image().iter().enumerate() {
        // SAFETY: INSTR_MEMn takes a 16-bit instruction.
        p1.instr_mem(i).write(|w| unsafe { w.bits(u32::from(*word)) });
    }
    setup_trigger_sm0();
    let Some(tick) = pio0_now().map(|now| now.wrapping_add(2000)) else { return false };
    if !sync_trigger(tick) {
        // Never synchronised: stopped, so no trigger can come of it.
        // SAFETY: CTRL with every state machine of PIO1 disabled.
        p1.ctrl().write(|w| unsafe { w.bits(0) });
        return false;
    }
    let Some(lag) = measure_trigger_lag() else {
        // SAFETY: as above.
        p1.ctrl().write(|w| unsafe { w.bits(0) });
        return false;
    };
    TRIGGER_LAG.store(lag, Ordering::Relaxed);
    start_watcher();
    true
}

/// PIO1 SM0 set up (disabled) in its sync loop: divider 1, the sync pin
/// as its JMP_PIN, its OUT and SET pins the trigger pin, both the trigger
/// pin's and the sync pin's output enables set (SET PINDIRS, §3.4.10: an
/// instruction forced while it runs would cost it a clock).
fn setup_trigger_sm0() {
    let p1 = pio1();
    // SAFETY: CTRL's SM_RESTART bits are self-clearing strobes.
    p1.ctrl().write(|w| unsafe { w.sm_restart().bits(1) });
    let r = p1.sm(0);
    // SAFETY (every write below, and `exec`'s): each field within its
    // width, from the SMx_* register tables (§3.7), as for PIO0 in
    // `start`; SMx_INSTR takes a 16-bit instruction, executed at once
    // (§3.5.7), here while PIO1 SM0 is disabled.
    r.sm_clkdiv().write(|w| unsafe { w.int().bits(1).frac().bits(0) });
    let (bottom, top) = TRIGGER_SYNC_WRAP;
    r.sm_execctrl().write(|w| unsafe {
        w.wrap_bottom()
            .bits(bottom)
            .wrap_top()
            .bits(top)
            .jmp_pin()
            .bits(SYNC_PIN)
            .status_sel()
            .txlevel()
            .status_n()
            .bits(1)
    });
    r.sm_shiftctrl().write(|w| w.fjoin_rx().bit(false));
    r.sm_pinctrl().write(|w| unsafe {
        w.out_base().bits(TRIGGER_PIN).out_count().bits(1).set_base().bits(TRIGGER_PIN).set_count().bits(1)
    });
    // Every pin through its synchroniser (the reset value, written for
    // clarity). SAFETY: one bit a GPIO, none set.
    p1.input_sync_bypass().write(|w| unsafe { w.bits(0) });
    let exec = |instr: u16| r.sm_instr().write(|w| unsafe { w.sm0_instr().bits(instr) });
    exec(mov(MovDst::Isr, false, MovSrc::Null));
    exec(set_pindirs(1));
    // The sync pin's output enable too, for the lag's measurement.
    r.sm_pinctrl().modify(|_, w| unsafe { w.set_base().bits(SYNC_PIN) });
    exec(set_pindirs(1));
    r.sm_pinctrl().modify(|_, w| unsafe { w.set_base().bits(TRIGGER_PIN) });
    exec(jmp_always(program::TRIGGER_SYNC_AT));
}

/// PIO0's count now, from the clock state machine's next word.
fn pio0_now() -> Option<u32> {
    let mut regs = Regs;
    for _ in 0..regs.rx_level(Sm::Clock) {
        let _ = regs.rx(Sm::Clock);
    }
    (0..SYNC_POLLS).find_map(|_| regs.rx(Sm::Clock)).map(program::clock_tick)
}

/// Two edges on PIO0's stimulus state machine's OUT pin (a pulse of
/// [`SYNC_WIDTH`] from tick `at`), both targets pushed at once (its FIFO
/// holds four); whether both flags came.
fn pio0_pulse(at: u32) -> bool {
    let mut regs = Regs;
    if !regs.tx(Sm::Stimulus, stimulus_target(at))
        || !regs.tx(Sm::Stimulus, stimulus_target(at.wrapping_add(SYNC_WIDTH)))
    {
        return false;
    }
    (0..2).all(|_| (0..SYNC_POLLS).any(|_| regs.take_flag(STIMULUS_FLAG)))
}

/// The sync edge for tick `tick`: PIO1 SM0 enabled in its sync loop with X
/// preloaded (`program::trigger_sync_x`), PIO0's pulse on the sync pin;
/// then SM0 is in the stimulus program with its own wrap. Whether it left
/// the sync loop.
fn sync_trigger(tick: u32) -> bool {
    let (p0, p1) = (pio(), pio1());
    let r = p1.sm(0);
    // SAFETY: TXF0 takes any 32-bit word (§3.7); SM0 is disabled and its
    // FIFO empty, and the `pull block` below takes this word at once.
    p1.txf(0).write(|w| unsafe { w.bits(trigger_sync_x(tick)) });
    // SAFETY: SMx_INSTR, executed at once while SM0 is disabled (§3.5.7).
    let exec = |instr: u16| r.sm_instr().write(|w| unsafe { w.sm0_instr().bits(instr) });
    exec(PULL_BLOCK);
    exec(mov(MovDst::X, false, MovSrc::Osr));
    // SAFETY: CTRL (§3.7): SM_ENABLE and CLKDIV_RESTART for SM0 only.
    p1.ctrl().write(|w| unsafe { w.sm_enable().bits(1).clkdiv_restart().bits(1) });

    let sync_io = io().gpio(SYNC_PIN as usize).gpio_ctrl();
    sync_io.modify(|_, w| w.funcsel().pio0());
    let stim = p0.sm(Sm::Stimulus as usize).sm_pinctrl();
    // SAFETY: PINCTRL OUT_BASE takes any GPIO number 0..=31 (§3.7); a
    // running state machine takes it at its next OUT/MOV PINS (§3.5.6).
    stim.modify(|_, w| unsafe { w.out_base().bits(SYNC_PIN) });
    let pulsed = pio0_pulse(tick);
    // SAFETY: as above: OUT_BASE back to GPIO2.
    stim.modify(|_, w| unsafe { w.out_base().bits(STIMULUS_PIN) });
    sync_io.modify(|_, w| w.funcsel().sio());
    // Left the sync loop: it saw the edge.
    let synced = pulsed && r.sm_addr().read().bits() as u8 != program::TRIGGER_SYNC_AT;
    // Now the stimulus program's own wrap.
    let (bottom, top) = STIMULUS_WRAP;
    // SAFETY: EXECCTRL WRAP_TOP/WRAP_BOTTOM take 0..=31 (§3.7); SM0 is in
    // 16..31 by now, where only a fall-through at 31 would use the wrap.
    r.sm_execctrl().modify(|_, w| unsafe { w.wrap_bottom().bits(bottom).wrap_top().bits(top) });
    synced
}

/// PIO1's lag behind PIO0 after the sync, measured on the sync pin: PIO0
/// SM2 (our TX pin's edge program, before any byte is sent) watches
/// GPIO25 instead for the time, while PIO0 SM3 makes a pulse on it at a
/// tick of PIO0's count and then PIO1 SM0 one at a tick of its own; both
/// pass the same synchroniser into SM2, whose words give the lag
/// (`trigger::sync_lag`). SM2 is left where it was (an even number of
/// words: a fall and a rise frame the pulses when our TX pin idles high),
/// with its FIFO empty.
fn measure_trigger_lag() -> Option<u32> {
    let (p0, p1) = (pio(), pio1());
    let mut regs = Regs;
    let tx_sm = p0.sm(Sm::TxStart as usize).sm_execctrl();
    let high = io().gpio(TX_PIN as usize).gpio_status().read().infrompad().bit_is_set();
    while regs.rx(Sm::TxStart).is_some() {}
    // SAFETY (the JMP_PIN and OUT_BASE writes below): any GPIO number
    // 0..=29, the other fields kept (§3.7); a running state machine takes
    // them at its next `jmp pin` or `mov pins` (§3.5.6).
    tx_sm.modify(|_, w| unsafe { w.jmp_pin().bits(SYNC_PIN) });
    let sync_io = io().gpio(SYNC_PIN as usize).gpio_ctrl();
    let stim = p0.sm(Sm::Stimulus as usize).sm_pinctrl();
    let trig = p1.sm(0).sm_pinctrl();
    sync_io.modify(|_, w| w.funcsel().pio0());
    stim.modify(|_, w| unsafe { w.out_base().bits(SYNC_PIN) });
    let a = pio0_now()?.wrapping_add(2000);
    let pio0_ok = pio0_pulse(a);
    stim.modify(|_, w| unsafe { w.out_base().bits(STIMULUS_PIN) });
    sync_io.modify(|_, w| w.funcsel().pio1());
    trig.modify(|_, w| unsafe { w.out_base().bits(SYNC_PIN) });
    let b = pio0_now()?.wrapping_add(2000);
    let pio1_ok = regs.trigger_tx(stimulus_target(b))
        && regs.trigger_tx(stimulus_target(b.wrapping_add(SYNC_WIDTH)))
        && (0..2).all(|_| (0..SYNC_POLLS).any(|_| regs.take_trigger_flag()));
    trig.modify(|_, w| unsafe { w.out_base().bits(TRIGGER_PIN) });
    sync_io.modify(|_, w| w.funcsel().sio());
    tx_sm.modify(|_, w| unsafe { w.jmp_pin().bits(TX_PIN) });
    let want = 4 + 2 * usize::from(high);
    let (mut words, mut n) = ([0u32; 6], 0);
    for _ in 0..SYNC_POLLS {
        if n == want {
            break;
        }
        if let Some(w) = regs.rx(Sm::TxStart) {
            words[n] = w;
            n += 1;
        }
    }
    if !(pio0_ok && pio1_ok) || regs.rx(Sm::TxStart).is_some() {
        return None;
    }
    sync_lag(&words[..n], high, a, b, SYNC_WIDTH)
}

/// PIO1 SM1, the response watcher (`program::WATCH`), parked, with the
/// trigger pin driven; SM0 stays enabled.
fn start_watcher() {
    let p1 = pio1();
    // SAFETY (every write): each field within its width (§3.7); SMx_INSTR
    // while SM1 is disabled.
    let w1 = p1.sm(1);
    w1.sm_clkdiv().write(|w| unsafe { w.int().bits(1).frac().bits(0) });
    let (wb, wt) = program::WATCH_WRAP;
    w1.sm_execctrl()
        .write(|w| unsafe { w.wrap_bottom().bits(wb).wrap_top().bits(wt).jmp_pin().bits(RESPONSE_PIN) });
    w1.sm_shiftctrl().write(|w| w.fjoin_rx().bit(false));
    w1.sm_pinctrl().write(|w| unsafe {
        w.in_base().bits(TRIGGER_PIN).set_base().bits(TRIGGER_PIN).set_count().bits(1).out_count().bits(0)
    });
    let exec1 = |instr: u16| w1.sm_instr().write(|w| unsafe { w.sm0_instr().bits(instr) });
    exec1(set_pindirs(1));
    exec1(jmp_always(program::WATCH_PARK));
    // SAFETY: CTRL (§3.7): SM0 stays enabled, SM1 is enabled; no restart.
    p1.ctrl().write(|w| unsafe { w.sm_enable().bits(0b11) });
}

/// The target UART's receiver (UART1 DR), as the capture loop reads it.
#[derive(Debug)]
pub struct TargetRx;

impl embedded_hal_nb::serial::ErrorType for TargetRx {
    type Error = embedded_hal_nb::serial::ErrorKind;
}

impl embedded_hal_nb::serial::Read<u8> for TargetRx {
    fn read(&mut self) -> embedded_hal_nb::nb::Result<u8, Self::Error> {
        use embedded_hal_nb::serial::ErrorKind;
        // SAFETY: UART1's registers; DR and FR are read by this receiver
        // alone (the HAL's Reader half is dropped). One read each.
        let u = unsafe { &*pac::UART1::ptr() };
        if u.uartfr().read().rxfe().bit_is_set() {
            return Err(embedded_hal_nb::nb::Error::WouldBlock);
        }
        // UARTDR (§4.2.8): data 7:0, then FE 8, PE 9, BE 10, OE 11, read
        // together with the byte they belong to.
        let dr = u.uartdr().read().bits();
        let kind = if dr & (1 << 11) != 0 {
            Some(ErrorKind::Overrun)
        } else if dr & (1 << 8) != 0 {
            Some(ErrorKind::FrameFormat)
        } else if dr & (1 << 9) != 0 {
            Some(ErrorKind::Parity)
        } else if dr & (1 << 10) != 0 {
            Some(ErrorKind::Other)
        } else {
            None
        };
        match kind {
            Some(k) => Err(embedded_hal_nb::nb::Error::Other(k)),
            None => Ok(dr as u8),
        }
    }
}

/// UART0 (GP0/GP1), the second host link: a debug probe's UART bridge.
/// Every access is to UART0's own registers, which nothing else uses after
/// the HAL has set its baud rate (its Reader and Writer halves are
/// dropped).
#[derive(Debug)]
pub struct HostUart;

fn uart0() -> &'static pac::uart0::RegisterBlock {
    // SAFETY: UART0's register block, at a fixed address for the life of
    // the program, used by this link alone; each access is one volatile
    // register access.
    unsafe { &*pac::UART0::ptr() }
}

impl HostUart {
    /// Bytes from the host, as many as `buf` takes; and how many had a
    /// receive error (UARTDR FE/PE/BE/OE, §4.2.8: such a byte is dropped).
    pub fn read(&mut self, buf: &mut [u8]) -> (usize, u32) {
        let u = uart0();
        let (mut n, mut errors) = (0, 0);
        while n < buf.len() && u.uartfr().read().rxfe().bit_is_clear() {
            let dr = u.uartdr().read().bits();
            if dr & 0xf00 != 0 {
                errors += 1;
            } else {
                buf[n] = dr as u8;
                n += 1;
            }
        }
        (n, errors)
    }

    /// Move bytes of `q` into the TX FIFO while it has room; the transmit
    /// interrupt (UARTIMSC TXIM, §4.2.8) is on while bytes wait, so the
    /// FIFO's draining brings the handler back.
    pub fn send<const N: usize>(&mut self, q: &mut latprobe_firmware::engine::txq::TxQueue<N>) {
        let u = uart0();
        let mut sent = 0;
        {
            let chunk = q.chunk();
            while sent < chunk.len() && u.uartfr().read().txff().bit_is_clear() {
                // SAFETY: DR takes one byte.
                u.uartdr().write(|w| unsafe { w.data().bits(chunk[sent]) });
                sent += 1;
            }
        }
        q.consume(sent);
        let waiting = !q.chunk().is_empty();
        u.uartimsc().modify(|_, w| w.txim().bit(waiting));
    }
}
