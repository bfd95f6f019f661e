//! When a schedule's slots are: every N hours on the hours that divide evenly since 1970 (so
//! `everyHours: 6` is 00:00, 06:00, 12:00, 18:00 UTC), or daily at a UTC minute.
use chrono::{DateTime, Utc};
use serde::Serialize;

use super::MAX_EVERY_HOURS;
use crate::error::{Error, Result};

const HOUR_MS: i64 = 3_600_000;
const DAY_MS: i64 = 24 * HOUR_MS;

/// A moment in milliseconds as a time (the epoch's start for one out of range, which no slot is).
pub(super) fn at(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).unwrap_or_default()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Cadence {
    EveryHours(i32),
    /// Minutes past midnight UTC.
    DailyAt(i32),
}

impl Cadence {
    /// `dailyAt` as given, `HH:MM` of a UTC day.
    pub fn daily_at(text: &str) -> Result<Cadence> {
        let refused = || Error::invalid_input("dailyAt", format!("{text} is not a UTC time HH:MM"));
        let (hours, minutes) = text.split_once(':').ok_or_else(refused)?;
        if hours.len() != 2 || minutes.len() != 2 {
            return Err(refused());
        }
        let (hours, minutes): (i32, i32) =
            (hours.parse().map_err(|_| refused())?, minutes.parse().map_err(|_| refused())?);
        if !(0..24).contains(&hours) || !(0..60).contains(&minutes) {
            return Err(refused());
        }
        Ok(Cadence::DailyAt(hours * 60 + minutes))
    }

    pub fn check(&self) -> Result<()> {
        match *self {
            Cadence::EveryHours(hours) if !(1..=MAX_EVERY_HOURS).contains(&hours) => {
                Err(Error::invalid_input("everyHours", format!("everyHours is 1 to {MAX_EVERY_HOURS}, not {hours}")))
            }
            _ => Ok(()),
        }
    }

    pub fn every_hours(&self) -> Option<i32> {
        match *self {
            Cadence::EveryHours(hours) => Some(hours),
            Cadence::DailyAt(_) => None,
        }
    }

    pub fn daily_at_minute(&self) -> Option<i32> {
        match *self {
            Cadence::DailyAt(minute) => Some(minute),
            Cadence::EveryHours(_) => None,
        }
    }

    /// The cadence a stored schedule has (None for a row with neither, which no call writes).
    pub fn of(every_hours: Option<i32>, daily_at_minute: Option<i32>) -> Option<Cadence> {
        match (every_hours, daily_at_minute) {
            (Some(hours), _) => Some(Cadence::EveryHours(hours)),
            (None, Some(minute)) => Some(Cadence::DailyAt(minute)),
            (None, None) => None,
        }
    }

    fn period_and_offset(&self) -> (i64, i64) {
        match *self {
            Cadence::EveryHours(hours) => (i64::from(hours.max(1)) * HOUR_MS, 0),
            Cadence::DailyAt(minute) => (DAY_MS, i64::from(minute) * 60_000),
        }
    }

    /// The latest slot at or before `ms`.
    pub fn slot_at_or_before(&self, ms: i64) -> i64 {
        let (period, offset) = self.period_and_offset();
        (ms - offset).div_euclid(period) * period + offset
    }

    /// The first slot strictly after `ms`.
    pub fn slot_after(&self, ms: i64) -> i64 {
        let (period, _) = self.period_and_offset();
        self.slot_at_or_before(ms) + period
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIDNIGHT: i64 = 1_800_057_600_000; // 2027-01-15T00:00:00Z

    #[test]
    fn every_six_hours_falls_on_the_utc_quarters_of_the_day() {
        assert_eq!(MIDNIGHT % DAY_MS, 0);
        let six = Cadence::EveryHours(6);
        assert_eq!(six.slot_at_or_before(MIDNIGHT + 7 * HOUR_MS), MIDNIGHT + 6 * HOUR_MS);
        assert_eq!(six.slot_after(MIDNIGHT + 6 * HOUR_MS), MIDNIGHT + 12 * HOUR_MS, "a slot is not after itself");
        assert_eq!(six.slot_at_or_before(MIDNIGHT), MIDNIGHT);
    }

    #[test]
    fn daily_at_a_minute_is_that_minute_of_each_utc_day() {
        let daily = Cadence::daily_at("03:30").unwrap();
        assert_eq!(daily, Cadence::DailyAt(210));
        let at = MIDNIGHT + 210 * 60_000;
        assert_eq!(daily.slot_at_or_before(MIDNIGHT + HOUR_MS), at - DAY_MS, "before 03:30: yesterday's");
        assert_eq!(daily.slot_at_or_before(at), at);
        assert_eq!(daily.slot_after(at), at + DAY_MS);
    }

    #[test]
    fn a_time_that_is_not_hh_mm_of_a_day_is_refused() {
        for text in ["24:00", "3:30", "03:60", "0330", "03:3a", ""] {
            assert!(Cadence::daily_at(text).is_err(), "{text}");
        }
        assert!(Cadence::EveryHours(0).check().is_err());
        assert!(Cadence::EveryHours(169).check().is_err());
        assert!(Cadence::EveryHours(168).check().is_ok());
    }
}
