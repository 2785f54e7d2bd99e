//! The Nucleo's boot steps before the RTIC app's resources exist: the
//! outputs parked, the reset cause, the clocks, the debug unit and the I/O
//! compensation cell, the host link's DMA, the watchdog. Each register
//! write names the RM0383 section it follows; `init` (main.rs) calls them
//! in order.

use stm32f4xx_hal::pac::{self, DMA1, USART2};
use stm32f4xx_hal::prelude::*;
use stm32f4xx_hal::rcc::{Config, Enable, Rcc};

use latprobe_firmware::board::nucleo::{gpio, iwdg, rcc as clock_tree};
use latprobe_firmware::boards::nucleo_f411re::TIMER_HZ;
use latprobe_firmware::hostrx;

use super::bus::{Gpio, HostRxRegs, Iwdg, HOST_RING, HOST_RX_RING};

/// The ST-LINK's MCO into OSC_IN (HSE bypass).
const HSE_HZ: u32 = 8_000_000;
/// HSERDY polls before giving up. A poll is one load of RCC_CR and
/// about five instructions (test, count, compare, two branches): 5 to
/// 8 cycles at the 16 MHz of HSI the core runs on then (no flash wait
/// state at reset), so 1 000 000 polls are 0.3 to 0.5 s; a bypassed
/// clock present from power-up is ready after a few of its cycles.
const HSE_READY_POLLS: u32 = 1_000_000;

/// CMPCR READY polls before going on without the compensation cell: a
/// poll is a few cycles at 100 MHz, and the cell is ready within
/// microseconds of CMP_PD.
const CMP_READY_POLLS: u32 = 100_000;

/// The ports' clocks on and the outputs parked at their idle levels
/// (`gpio::park_outputs`, RM0383 §8.3.1, §8.4). The HAL's `split`
/// enables a port's clock (RCC_AHB1ENR, §6.3.9) and pulses its reset
/// (RCC_AHB1RSTR, §6.3.5): so it comes first, and the park right after
/// it; nothing resets the ports again. PA0, PA1, PA8, PA9, PA10, PB4
/// and PB10 get their functions later from the lib
/// (`gpio::configure_pins`), not from the HAL.
pub(crate) fn park_pins(
    a: pac::GPIOA,
    b: pac::GPIOB,
    rcc: &mut Rcc,
) -> (stm32f4xx_hal::gpio::gpioa::Parts, stm32f4xx_hal::gpio::gpiob::Parts) {
    let (gpioa, gpiob) = (a.split(rcc), b.split(rcc));
    gpio::park_outputs(&mut Gpio);
    (gpioa, gpiob)
}

/// RCC_CSR (RM0383 §6.3.18): whether the IWDG caused this reset; the
/// flags are then cleared (RMVF), so the next reset's cause is its own.
pub(crate) fn take_reset_cause(rcc: &Rcc) -> bool {
    let csr = rcc.csr().read().bits();
    rcc.csr().modify(|_, w| w.rmvf().set_bit());
    iwdg::reset_by_watchdog(csr)
}

/// Scale 1, the HSE bypass with a bounded wait, the PLL to 100 MHz,
/// and the clock tree read back.
pub(crate) fn clocks(pwr: &pac::PWR, rcc: Rcc) -> Rcc {
    // RM0383 §5.4.1 (PWR_CR): VOS resets to Scale 2, rated for 84 MHz
    // at most; 100 MHz needs Scale 1, and VOS "can be modified only
    // when the PLL is OFF". stm32f4xx-hal 0.23's `Rcc::freeze`
    // (src/rcc/f4/mod.rs, `freeze_internal`) never writes VOS on the
    // F411 (only ODEN/ODSWEN, on F427/F446/F469) and switches the PLL
    // on itself: so Scale 1 is set here, before `freeze`. PWREN first
    // (RM0383 §6.3.11, RCC_APB1ENR), then a DSB so the write lands
    // after the clock is on.
    rcc.apb1enr().modify(|_, w| w.pwren().set_bit());
    cortex_m::asm::dsb();
    pwr.cr().modify(|_, w| w.vos().scale1());

    // 8 MHz from the ST-LINK's MCO into OSC_IN (HSE bypass). The HAL
    // waits for HSERDY for ever; a missing MCO (solder bridge SB50
    // open, an ST-LINK cut off) would hang without a word. So the
    // bypass is started here with a bounded wait (RM0383 §6.3.1,
    // RCC_CR: HSEBYP is written while HSEON is 0, then HSEON).
    rcc.cr().modify(|_, w| w.hsebyp().bypassed());
    rcc.cr().modify(|_, w| w.hseon().set_bit());
    let mut polls = 0;
    while rcc.cr().read().hserdy().bit_is_clear() {
        polls += 1;
        if polls == HSE_READY_POLLS {
            defmt::panic!(
                "no 8 MHz clock on OSC_IN (PH0): the ST-LINK's MCO does not reach the STM32 \
                 (check SB50 and that the ST-LINK part of the board is powered and not cut off)"
            );
        }
    }
    // PLL to 100 MHz; APB1 at its 50 MHz maximum, so its timers run at
    // 100 MHz. The HAL sets 3 flash wait states (RM0383 §3.4, table 5).
    let rcc = rcc.freeze(
        Config::hse(HSE_HZ.Hz())
            .bypass_hse_oscillator()
            .sysclk(TIMER_HZ.Hz())
            .hclk(TIMER_HZ.Hz())
            .pclk1(50.MHz())
            .pclk2(TIMER_HZ.Hz()),
    );
    check_clocks(&rcc);
    rcc
}

/// The clock tree as the HAL computed it and as the registers say.
pub(crate) fn check_clocks(rcc: &Rcc) {
    let clocks = rcc.clocks;
    if clocks.sysclk().raw() != TIMER_HZ || clocks.timclk1().raw() != TIMER_HZ {
        defmt::panic!("clock tree: sysclk {} Hz, TIM2 {} Hz", clocks.sysclk().raw(), clocks.timclk1().raw());
    }
    // What the registers say, not what the HAL computed: RCC_CFGR,
    // RCC_PLLCFGR and RCC_DCKCFGR read back (RM0383 §6.3.2, §6.3.3).
    let (cfgr, pllcfgr, dckcfgr) =
        (rcc.cfgr().read().bits(), rcc.pllcfgr().read().bits(), rcc.dckcfgr().read().bits());
    match clock_tree::decode(cfgr, pllcfgr, dckcfgr, HSE_HZ) {
        Ok(c) if c.sysclk == TIMER_HZ && c.tim_apb1 == TIMER_HZ => {}
        Ok(c) => defmt::panic!(
            "clock tree read back: SYSCLK {=u32} Hz, TIM2 {=u32} Hz, not {=u32} (RCC_CFGR {=u32:#x}, RCC_PLLCFGR {=u32:#x}, RCC_DCKCFGR {=u32:#x})",
            c.sysclk,
            c.tim_apb1,
            TIMER_HZ,
            cfgr,
            pllcfgr,
            dckcfgr
        ),
        Err(e) => defmt::panic!(
            "clock tree read back: {} (RCC_CFGR {=u32:#x}, RCC_PLLCFGR {=u32:#x})",
            e,
            cfgr,
            pllcfgr
        ),
    }
    // SAFETY: a read of PWR_CSR has no side effect (VOSRDY, RM0383 §5.4.2).
    let vos_ready = unsafe { (*pac::PWR::ptr()).csr().read().vosrdy().bit_is_set() };
    defmt::info!(
        "clocks: sysclk {=u32} Hz, TIM2 {=u32} Hz, VOS Scale 1 ready: {=bool}",
        clocks.sysclk().raw(),
        clocks.timclk1().raw(),
        vos_ready
    );
}

/// The debug unit and the I/O compensation cell.
pub(crate) fn debug_and_io(dbgmcu: &pac::DBGMCU, syscfg: &pac::SYSCFG, rcc: &mut Rcc) {
    // RM0383 §23.16 (DBGMCU_CR): DBG_SLEEP keeps HCLK running in
    // sleep, so the debugger's RTT reads go on while `idle` sits in
    // WFI. DBGMCU_APB1_FZ (§23.16): DBG_IWDG_STOP freezes the
    // watchdog while the core is halted, so a breakpoint does not reset
    // the probe (stm32f4xx-hal 0.23: `IndependentWatchdog::
    // stop_on_debug` writes the same bit). Both are reset by a power-on
    // reset only.
    dbgmcu.cr().modify(|_, w| w.dbg_sleep().set_bit());
    dbgmcu.apb1_fz().modify(|_, w| w.dbg_iwdg_stop().set_bit());
    // The I/O compensation cell (RM0383 §7.2, SYSCFG_CMPCR): the lib
    // sets very high speed (OSPEEDR = 11, §8.4.3) on the outputs, and
    // DS10314 asks for the cell at that speed above 2.4 V (the Nucleo
    // runs at 3.3 V). SYSCFG's clock first (RCC_APB2ENR SYSCFGEN,
    // §6.3.12), then CMP_PD = 1, then READY. stm32f4xx-hal 0.23 has no
    // compensation-cell API.
    pac::SYSCFG::enable(rcc);
    // SAFETY: CMPCR's CMP_PD (bit 0) is read/write in RM0383 §7.2;
    // the PAC (ST's SVD) marks the register read-only, so the word is
    // written by address. Its other bits are reserved or read-only.
    unsafe { syscfg.cmpcr().as_ptr().write_volatile(1) };
    let mut polls = 0;
    while syscfg.cmpcr().read().ready().is_not_ready() {
        polls += 1;
        if polls == CMP_READY_POLLS {
            defmt::warn!("I/O compensation cell not ready: the pins' edges are uncompensated");
            return;
        }
    }
}

/// Host-link TX and RX by DMA on USART2 (set up by the HAL above).
pub(crate) fn host_link_dma(rcc: &mut Rcc) {
    // Host-link TX by DMA: USART2_TX is DMA1 stream 6 channel 4 (RM0383
    // table 27). The USART requests a transfer whenever TXE is set.
    DMA1::enable(rcc);
    // SAFETY: USART2 is configured by the HAL and owned by
    // `_host_rx`/`_host_tx`; setting DMAT in CR3 (§19.6.6) only lets
    // the DMA write DR, which nothing else does (the Tx half is
    // dropped, never used).
    unsafe { (*USART2::ptr()).cr3().modify(|_, w| w.dmat().set_bit()) };
    // Host-link RX by DMA: USART2_RX is DMA1 stream 5 channel 4 (RM0383
    // table 27), circular into the ring; DMAR, EIE and IDLEIE set, RXNEIE
    // off (RM0383 §9.3.17, §19.3.13, §19.6.4, §19.6.6: `hostrx::start`).
    // SAFETY: USART2's DR address is a fixed peripheral register; taking
    // it reads nothing.
    let dr = unsafe { (*USART2::ptr()).dr().as_ptr() } as u32;
    let ring = HOST_RX_RING.0.get() as u32;
    if !hostrx::start(&mut HostRxRegs, hostrx::USART2_RX_CHANNEL, dr, ring, HOST_RING as u16) {
        defmt::panic!("DMA1 stream 5 would not turn off for the host-link receive set-up");
    }
}

/// The IWDG at 1 s (`board::nucleo::iwdg`, RM0383 §17.3): from here
/// on, the engine task must run at least once a second.
pub(crate) fn start_watchdog() {
    if !iwdg::start(&mut Iwdg, iwdg::WATCHDOG) {
        defmt::warn!("IWDG: PR/RLR update never landed; the watchdog runs at its reset 512 ms");
    }
}
