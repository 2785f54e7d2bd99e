//! The clock tree as the registers say it is: RCC_CFGR, RCC_PLLCFGR and
//! RCC_DCKCFGR read back after the HAL's `freeze`, decoded into SYSCLK,
//! HCLK, PCLK1/2 and the APB1 timers' clock (TIM2's), so that the board
//! checks what the hardware runs at rather than what the HAL computed.
//! Integer arithmetic only.

/// Clock frequencies, in Hz.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Clocks {
    /// SYSCLK.
    pub sysclk: u32,
    /// HCLK (AHB).
    pub hclk: u32,
    /// PCLK1 (APB1).
    pub pclk1: u32,
    /// PCLK2 (APB2).
    pub pclk2: u32,
    /// The clock of the timers on APB1, TIM2 among them.
    pub tim_apb1: u32,
}

/// A register setting the decoder refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ClockError {
    /// SWS = 11: "not applicable" (RM0383 §6.3.3).
    BadSws,
    /// PLLM outside 2..=63 (§6.3.2: 0 and 1 are wrong configurations).
    BadPllm(u32),
    /// PLLN outside 50..=432 (§6.3.2).
    BadPlln(u32),
}

/// HSI, 16 MHz (RM0383 §6.2.2).
pub const HSI_HZ: u32 = 16_000_000;

// RCC_PLLCFGR (RM0383 §6.3.2).
const PLLM_MASK: u32 = 0x3F;
const PLLN_SHIFT: u32 = 6;
const PLLN_MASK: u32 = 0x1FF;
const PLLP_SHIFT: u32 = 16;
/// PLLSRC: 1 = HSE.
const PLLSRC_HSE: u32 = 1 << 22;
// RCC_CFGR (RM0383 §6.3.3).
const SWS_SHIFT: u32 = 2;
const HPRE_SHIFT: u32 = 4;
const PPRE1_SHIFT: u32 = 10;
const PPRE2_SHIFT: u32 = 13;
/// RCC_DCKCFGR TIMPRE (RM0383 §6.3.23), bit 24.
const TIMPRE: u32 = 1 << 24;

/// AHB prescaler, HPRE (4 bits): 0xxx ÷1, 1000 ÷2 … 1011 ÷16, 1100 ÷64 … 1111 ÷512.
const fn ahb_div(hpre: u32) -> u32 {
    match hpre {
        0b1000..=0b1011 => 2 << (hpre - 0b1000),
        0b1100..=0b1111 => 64 << (hpre - 0b1100),
        _ => 1,
    }
}

/// APB prescaler, PPREx (3 bits): 0xx ÷1, 100 ÷2, 101 ÷4, 110 ÷8, 111 ÷16.
const fn apb_div(ppre: u32) -> u32 {
    match ppre {
        0b100..=0b111 => 2 << (ppre - 0b100),
        _ => 1,
    }
}

/// Decode the clock tree from the three registers, the HSE (bypass or
/// crystal) being `hse_hz`.
///
/// - SYSCLK (§6.3.3, SWS): HSI, HSE or the PLL's P output, f_VCO =
///   f_PLL_in × PLLN / PLLM, SYSCLK = f_VCO / PLLP (PLLP 00/01/10/11 =
///   2/4/6/8; §6.3.2).
/// - HCLK = SYSCLK / HPRE, PCLKx = HCLK / PPREx.
/// - APB1 timers (§6.2, §6.3.23 TIMPRE): TIMPRE = 0: PCLK1 if PPRE1 is ÷1,
///   else 2 × PCLK1; TIMPRE = 1: HCLK if PPRE1 is ÷1, ÷2 or ÷4, else 4 × PCLK1.
pub fn decode(cfgr: u32, pllcfgr: u32, dckcfgr: u32, hse_hz: u32) -> Result<Clocks, ClockError> {
    let sysclk = match (cfgr >> SWS_SHIFT) & 0b11 {
        0b00 => HSI_HZ,
        0b01 => hse_hz,
        0b10 => {
            let m = pllcfgr & PLLM_MASK;
            let n = (pllcfgr >> PLLN_SHIFT) & PLLN_MASK;
            let p = 2 * (((pllcfgr >> PLLP_SHIFT) & 0b11) + 1);
            if !(2..=63).contains(&m) {
                return Err(ClockError::BadPllm(m));
            }
            if !(50..=432).contains(&n) {
                return Err(ClockError::BadPlln(n));
            }
            let input = if pllcfgr & PLLSRC_HSE != 0 { hse_hz } else { HSI_HZ };
            (u64::from(input) * u64::from(n) / u64::from(m) / u64::from(p)) as u32
        }
        _ => return Err(ClockError::BadSws),
    };
    let hclk = sysclk / ahb_div((cfgr >> HPRE_SHIFT) & 0xF);
    let ppre1 = apb_div((cfgr >> PPRE1_SHIFT) & 0b111);
    let pclk1 = hclk / ppre1;
    let pclk2 = hclk / apb_div((cfgr >> PPRE2_SHIFT) & 0b111);
    let tim_apb1 = match (dckcfgr & TIMPRE != 0, ppre1) {
        (false, 1) => pclk1,
        (false, _) => 2 * pclk1,
        (true, 1 | 2 | 4) => hclk,
        (true, _) => 4 * pclk1,
    };
    Ok(Clocks { sysclk, hclk, pclk1, pclk2, tim_apb1 })
}
