//! The Nucleo's watchdog: the IWDG (RM0383 §17) at 1 s on the LSI, its
//! start sequence, and the reset cause read from RCC_CSR (§6.3.18) at
//! boot. The engine task feeds it on every pass; SysTick pends a pass
//! every 100 ms, so an idle probe is fed too, and a probe whose engine
//! stops making progress for a second resets and says so after its next
//! Hello ([`BOOT_NOTE`], `Engine::set_boot_note`).
//!
//! ```text
//!   KR = 0xCCCC   start (forces the LSI on, §17.3)
//!   KR = 0x5555   unlock PR and RLR (§17.3, register access protection)
//!   PR, RLR       divider and reload (§17.4.2, §17.4.3)
//!   SR = 0?       PVU and RVU clear: both reached the LSI domain (§17.4.4)
//!   KR = 0xAAAA   reload with the new RLR, and lock PR/RLR again (§17.4.1)
//! ```

/// IWDG_KR keys (RM0383 §17.4.1), as stm32f4xx-hal 0.23's
/// `watchdog.rs` names them (KR_START, KR_ACCESS, KR_RELOAD).
pub mod key {
    /// Start the watchdog.
    pub const START: u32 = 0xCCCC;
    /// Enable writes to PR and RLR.
    pub const ACCESS: u32 = 0x5555;
    /// Reload the counter from RLR (the feed).
    pub const RELOAD: u32 = 0xAAAA;
}

/// The LSI's nominal rate (RM0383 §6.2.5; DS10314 gives 17 to 47 kHz,
/// so a nominal 1 s is 0.68 to 1.9 s: far above the 100 ms feed).
pub const LSI_HZ: u32 = 32_000;

/// IWDG_SR (§17.4.4): PVU, a prescaler update under way.
pub const SR_PVU: u32 = 1 << 0;
/// IWDG_SR: RVU, a reload value update under way.
pub const SR_RVU: u32 = 1 << 1;

/// RCC_CSR (§6.3.18): RMVF, write 1 to clear the reset flags.
pub const CSR_RMVF: u32 = 1 << 24;
/// RCC_CSR: IWDGRSTF, the last reset came from the IWDG (the PAC calls
/// it WDGRSTF).
pub const CSR_IWDGRSTF: u32 = 1 << 29;

/// What the host is told after every Hello when the IWDG reset the probe
/// (at most `MAX_LOG_TEXT` bytes).
pub const BOOT_NOTE: &str =
    "probe reset by its watchdog: its engine stalled for about 1 s; a run it was in was cut short";

/// Polls of IWDG_SR before giving up on PVU/RVU: they clear within five
/// LSI periods (§17.4.4), about 300 µs at the slowest LSI, and a poll is
/// a few cycles at 100 MHz.
pub const SR_POLLS: u32 = 1_000_000;

/// A prescaler (PR) and reload (RLR) setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    /// PR (§17.4.2): the LSI divided by 4 << PR.
    pub pr: u32,
    /// RLR (§17.4.3), 12 bits.
    pub rlr: u32,
}

impl Setting {
    /// The smallest divider whose 12-bit reload holds `ms` at [`LSI_HZ`]
    /// (the finest step), with the reload that gives `ms`.
    pub const fn for_ms(ms: u32) -> Self {
        let mut pr = 0;
        loop {
            let ticks = LSI_HZ / (4 << pr) * ms / 1000;
            if ticks <= 0x1000 || pr == 6 {
                let rlr = if ticks == 0 { 0 } else { ticks - 1 };
                return Self { pr, rlr: if rlr > 0xFFF { 0xFFF } else { rlr } };
            }
            pr += 1;
        }
    }

    /// The timeout at [`LSI_HZ`], in ms: (RLR + 1) · divider / LSI, as
    /// stm32f4xx-hal 0.23's `timeout_period` computes it.
    pub const fn timeout_ms(self) -> u32 {
        (self.rlr + 1) * (4 << self.pr) * 1000 / LSI_HZ
    }
}

/// The probe's watchdog: 1 s.
pub const WATCHDOG: Setting = Setting::for_ms(1000);

/// Whether RCC_CSR says the IWDG caused the last reset.
pub const fn reset_by_watchdog(csr: u32) -> bool {
    csr & CSR_IWDGRSTF != 0
}

/// The IWDG's registers, for [`start`].
pub trait IwdgRegs {
    /// Write IWDG_KR.
    fn kr(&mut self, key: u32);
    /// Write IWDG_PR.
    fn pr(&mut self, pr: u32);
    /// Write IWDG_RLR.
    fn rlr(&mut self, rlr: u32);
    /// Read IWDG_SR.
    fn sr(&mut self) -> u32;
}

/// Start the IWDG at `s` in the order of the module's table (ST's
/// reference driver's; stm32f4xx-hal 0.23 writes PR and RLR and reloads
/// before its start key, and waits for neither PVU nor RVU). Returns false
/// if PVU or RVU never cleared: the watchdog then runs at its reset
/// setting (PR 0, RLR 0xFFF: 512 ms), and is fed all the same.
pub fn start<R: IwdgRegs>(r: &mut R, s: Setting) -> bool {
    r.kr(key::START);
    r.kr(key::ACCESS);
    r.pr(s.pr);
    r.rlr(s.rlr);
    let mut polls = 0;
    let mut ok = true;
    while r.sr() & (SR_PVU | SR_RVU) != 0 {
        polls += 1;
        if polls == SR_POLLS {
            ok = false;
            break;
        }
    }
    r.kr(key::RELOAD);
    ok
}
