//! Combining the watermarks of several input channels into one (Flink's
//! `StatusWatermarkValve`).
//!
//! The output watermark is the minimum over the active channels that have
//! caught up with it, and it only ever advances. An idle channel does not
//! hold the minimum back; when it becomes active again it counts only once
//! its own watermark has reached the current output. When every channel is
//! idle the output goes idle too, first advancing to the largest watermark
//! any channel reached. A channel that ended counts no more.

use crate::element::WatermarkStatus;

#[derive(Debug, Clone)]
struct ChannelState {
    watermark: i64,
    idle: bool,
    aligned: bool,
    ended: bool,
}

/// What the valve emits in response to one input.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ValveOutput {
    /// A new, larger output watermark.
    pub watermark: Option<i64>,
    /// A change of the output's status.
    pub status: Option<WatermarkStatus>,
}

/// The watermark state of one input (a set of channels).
#[derive(Debug, Clone)]
pub struct WatermarkValve {
    channels: Vec<ChannelState>,
    last_output: i64,
    output_idle: bool,
}

impl WatermarkValve {
    /// A valve over `channels` channels, all active, at the lowest watermark.
    pub fn new(channels: usize) -> Self {
        WatermarkValve {
            channels: vec![
                ChannelState {
                    watermark: i64::MIN,
                    idle: false,
                    aligned: true,
                    ended: false,
                };
                channels
            ],
            last_output: i64::MIN,
            output_idle: false,
        }
    }

    /// The last watermark emitted.
    pub fn current(&self) -> i64 {
        self.last_output
    }

    /// Whether every channel is idle.
    pub fn is_idle(&self) -> bool {
        self.output_idle
    }

    /// The last watermark channel `channel` delivered (`i64::MIN` before
    /// its first).
    pub fn channel_watermark(&self, channel: usize) -> i64 {
        self.channels.get(channel).map_or(i64::MIN, |c| c.watermark)
    }

    /// A watermark arrived on `channel`.
    pub fn on_watermark(&mut self, channel: usize, watermark: i64) -> ValveOutput {
        let ch = &mut self.channels[channel];
        // As in Flink, an idle channel's watermark is ignored until it says
        // it is active again.
        if ch.idle || ch.ended || watermark <= ch.watermark {
            return ValveOutput::default();
        }
        ch.watermark = watermark;
        if !ch.aligned && watermark >= self.last_output {
            ch.aligned = true;
        }
        ValveOutput {
            watermark: self.advance_to_min(),
            status: None,
        }
    }

    /// `channel` became idle or active.
    pub fn on_status(&mut self, channel: usize, status: WatermarkStatus) -> ValveOutput {
        let mut output = ValveOutput::default();
        let last_output = self.last_output;
        let ch = &mut self.channels[channel];
        match status {
            WatermarkStatus::Idle if !ch.idle => {
                ch.idle = true;
                ch.aligned = false;
                if self.channels.iter().all(|c| c.idle || c.ended) {
                    output.watermark = self.advance_to_max();
                    self.output_idle = true;
                    output.status = Some(WatermarkStatus::Idle);
                } else {
                    output.watermark = self.advance_to_min();
                }
            }
            WatermarkStatus::Active if ch.idle => {
                ch.idle = false;
                ch.aligned = ch.watermark >= last_output;
                if self.output_idle {
                    self.output_idle = false;
                    output.status = Some(WatermarkStatus::Active);
                }
            }
            _ => {}
        }
        output
    }

    /// `channel` ended: it holds nothing back any more.
    pub fn on_end(&mut self, channel: usize) -> ValveOutput {
        self.channels[channel].ended = true;
        ValveOutput {
            watermark: self.advance_to_min(),
            status: None,
        }
    }

    fn advance_to_min(&mut self) -> Option<i64> {
        let min = self
            .channels
            .iter()
            .filter(|c| c.aligned && !c.idle && !c.ended)
            .map(|c| c.watermark)
            .min()?;
        self.advance(min)
    }

    fn advance_to_max(&mut self) -> Option<i64> {
        let max = self.channels.iter().map(|c| c.watermark).max()?;
        self.advance(max)
    }

    fn advance(&mut self, watermark: i64) -> Option<i64> {
        (watermark > self.last_output).then(|| {
            self.last_output = watermark;
            watermark
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn minimum_over_channels_advances_only() {
        let mut v = WatermarkValve::new(2);
        assert_eq!(v.on_watermark(0, 10).watermark, None);
        assert_eq!(v.on_watermark(1, 5).watermark, Some(5));
        assert_eq!(v.on_watermark(1, 20).watermark, Some(10));
        assert_eq!(v.on_watermark(0, 8).watermark, None, "regression ignored");
        assert_eq!(v.on_watermark(0, 30).watermark, Some(20));
    }

    #[test]
    fn idle_channel_does_not_hold_back_and_realigns() {
        let mut v = WatermarkValve::new(2);
        v.on_watermark(0, 100);
        let out = v.on_status(1, WatermarkStatus::Idle);
        assert_eq!(out.watermark, Some(100));
        assert_eq!(out.status, None);
        assert_eq!(v.on_watermark(0, 150).watermark, Some(150));
        // Channel 1 comes back behind the output: it must not pull it back.
        assert_eq!(v.on_status(1, WatermarkStatus::Active).status, None);
        assert_eq!(v.on_watermark(1, 120).watermark, None);
        assert_eq!(v.on_watermark(0, 200).watermark, Some(200));
        // Still behind the output: not counted, so channel 0 alone advances it.
        assert_eq!(v.on_watermark(1, 180).watermark, None);
        // Caught up (>= 200): it holds the minimum again.
        assert_eq!(v.on_watermark(1, 220).watermark, None);
        assert_eq!(v.on_watermark(0, 300).watermark, Some(220));
        assert_eq!(v.on_watermark(1, 250).watermark, Some(250));
    }

    #[test]
    fn all_idle_goes_idle_at_the_max() {
        let mut v = WatermarkValve::new(2);
        v.on_watermark(0, 7);
        v.on_watermark(1, 3);
        assert_eq!(v.on_status(0, WatermarkStatus::Idle).watermark, None);
        let out = v.on_status(1, WatermarkStatus::Idle);
        assert_eq!(out.watermark, Some(7));
        assert_eq!(out.status, Some(WatermarkStatus::Idle));
        assert!(v.is_idle());
        let out = v.on_status(0, WatermarkStatus::Active);
        assert_eq!(out.status, Some(WatermarkStatus::Active));
    }

    #[test]
    fn ended_channel_releases_the_minimum() {
        let mut v = WatermarkValve::new(2);
        v.on_watermark(0, 50);
        assert_eq!(v.on_end(1).watermark, Some(50));
    }

    proptest! {
        #[test]
        fn output_never_regresses(events in proptest::collection::vec((0usize..3, -1000i64..1000, 0u8..6), 0..200)) {
            let mut v = WatermarkValve::new(3);
            let mut last = i64::MIN;
            for (ch, wm, kind) in events {
                let out = match kind {
                    0 => v.on_status(ch, WatermarkStatus::Idle),
                    1 => v.on_status(ch, WatermarkStatus::Active),
                    _ => v.on_watermark(ch, wm),
                };
                if let Some(w) = out.watermark {
                    prop_assert!(w > last);
                    last = w;
                }
                prop_assert_eq!(v.current(), last);
            }
        }
    }
}
