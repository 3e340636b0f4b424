//! Evictors: drop elements from a window before or after its function runs
//! (Flink's `Evictor`).

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use weir_runtime::element::{StreamRecord, NO_TIMESTAMP};

/// What an evictor may read.
#[derive(Debug, Clone, Copy)]
pub struct EvictorContext {
    /// The operator's watermark.
    pub current_watermark: i64,
    /// The current processing time.
    pub current_processing_time: i64,
}

/// Removes elements from a window's contents, which are kept in arrival
/// order. What is removed is gone for later firings too.
pub trait Evictor<T, W>: Send + 'static {
    /// Before the window function runs.
    fn evict_before(
        &mut self,
        elements: &mut Vec<StreamRecord<T>>,
        window: &W,
        ctx: &EvictorContext,
    );

    /// After the window function ran.
    fn evict_after(
        &mut self,
        elements: &mut Vec<StreamRecord<T>>,
        window: &W,
        ctx: &EvictorContext,
    );
}

/// Keeps at most `max_count` elements, dropping the oldest (Flink's
/// `CountEvictor`).
#[derive(Debug, Clone, Copy)]
pub struct CountEvictor {
    max_count: usize,
    after: bool,
}

impl CountEvictor {
    /// Evicts before the window function.
    pub fn of(max_count: usize) -> Self {
        CountEvictor {
            max_count,
            after: false,
        }
    }

    /// Evicts after the window function if `after`.
    pub fn of_after(max_count: usize, after: bool) -> Self {
        CountEvictor { max_count, after }
    }

    fn evict<T>(&self, elements: &mut Vec<StreamRecord<T>>) {
        if elements.len() > self.max_count {
            let excess = elements.len() - self.max_count;
            elements.drain(..excess);
        }
    }
}

impl<T: 'static, W: 'static> Evictor<T, W> for CountEvictor {
    fn evict_before(&mut self, elements: &mut Vec<StreamRecord<T>>, _w: &W, _ctx: &EvictorContext) {
        if !self.after {
            self.evict(elements);
        }
    }

    fn evict_after(&mut self, elements: &mut Vec<StreamRecord<T>>, _w: &W, _ctx: &EvictorContext) {
        if self.after {
            self.evict(elements);
        }
    }
}

/// Keeps elements within `window_size` of the newest element's timestamp
/// (Flink's `TimeEvictor`).
#[derive(Debug, Clone, Copy)]
pub struct TimeEvictor {
    window_size: i64,
    after: bool,
}

impl TimeEvictor {
    /// Evicts before the window function.
    pub fn of(window_size: Duration) -> Self {
        Self::of_after(window_size, false)
    }

    /// Evicts after the window function if `after`.
    pub fn of_after(window_size: Duration, after: bool) -> Self {
        TimeEvictor {
            window_size: window_size.as_millis() as i64,
            after,
        }
    }

    fn evict<T>(&self, elements: &mut Vec<StreamRecord<T>>) {
        // Flink evicts only when every element has a timestamp.
        if elements.is_empty() || elements.iter().any(|r| r.timestamp == NO_TIMESTAMP) {
            return;
        }
        let max = elements
            .iter()
            .map(|r| r.timestamp)
            .max()
            .unwrap_or(i64::MIN);
        let cutoff = max - self.window_size;
        elements.retain(|r| r.timestamp > cutoff);
    }
}

impl<T: 'static, W: 'static> Evictor<T, W> for TimeEvictor {
    fn evict_before(&mut self, elements: &mut Vec<StreamRecord<T>>, _w: &W, _ctx: &EvictorContext) {
        if !self.after {
            self.evict(elements);
        }
    }

    fn evict_after(&mut self, elements: &mut Vec<StreamRecord<T>>, _w: &W, _ctx: &EvictorContext) {
        if self.after {
            self.evict(elements);
        }
    }
}

type DeltaFn<T> = Arc<dyn Fn(&T, &T) -> f64 + Send + Sync>;

/// Drops elements whose delta to the newest element is at least a
/// threshold (Flink's `DeltaEvictor`).
pub struct DeltaEvictor<T> {
    threshold: f64,
    delta: DeltaFn<T>,
    after: bool,
    _type: PhantomData<fn(&T)>,
}

impl<T> Clone for DeltaEvictor<T> {
    fn clone(&self) -> Self {
        DeltaEvictor {
            threshold: self.threshold,
            delta: Arc::clone(&self.delta),
            after: self.after,
            _type: PhantomData,
        }
    }
}

impl<T> DeltaEvictor<T> {
    /// Evicts, before the window function, elements `e` with
    /// `delta(e, newest) >= threshold`.
    pub fn of(threshold: f64, delta: impl Fn(&T, &T) -> f64 + Send + Sync + 'static) -> Self {
        DeltaEvictor {
            threshold,
            delta: Arc::new(delta),
            after: false,
            _type: PhantomData,
        }
    }

    /// Evicts after the window function instead.
    pub fn after(mut self) -> Self {
        self.after = true;
        self
    }

    fn evict(&self, elements: &mut Vec<StreamRecord<T>>)
    where
        T: Clone,
    {
        let Some(last) = elements.last().map(|r| r.value.clone()) else {
            return;
        };
        elements.retain(|r| (self.delta)(&r.value, &last) < self.threshold);
    }
}

impl<T: Clone + Send + 'static, W: 'static> Evictor<T, W> for DeltaEvictor<T> {
    fn evict_before(&mut self, elements: &mut Vec<StreamRecord<T>>, _w: &W, _ctx: &EvictorContext) {
        if !self.after {
            self.evict(elements);
        }
    }

    fn evict_after(&mut self, elements: &mut Vec<StreamRecord<T>>, _w: &W, _ctx: &EvictorContext) {
        if self.after {
            self.evict(elements);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recs(ts: &[i64]) -> Vec<StreamRecord<i64>> {
        ts.iter()
            .map(|t| StreamRecord::with_timestamp(*t, *t))
            .collect()
    }

    const CTX: EvictorContext = EvictorContext {
        current_watermark: 0,
        current_processing_time: 0,
    };

    #[test]
    fn count_evictor_keeps_the_newest() {
        let mut v = recs(&[1, 2, 3, 4, 5]);
        Evictor::<i64, ()>::evict_before(&mut CountEvictor::of(3), &mut v, &(), &CTX);
        assert_eq!(v.iter().map(|r| r.value).collect::<Vec<_>>(), vec![3, 4, 5]);
    }

    #[test]
    fn time_evictor_keeps_the_recent() {
        let mut v = recs(&[1000, 5000, 2000, 9000]);
        Evictor::<i64, ()>::evict_before(
            &mut TimeEvictor::of(Duration::from_secs(5)),
            &mut v,
            &(),
            &CTX,
        );
        assert_eq!(
            v.iter().map(|r| r.value).collect::<Vec<_>>(),
            vec![5000, 9000]
        );
    }

    #[test]
    fn delta_evictor_drops_far_elements() {
        let mut v = recs(&[1, 50, 95, 100]);
        let mut e = DeltaEvictor::of(10.0, |a: &i64, b: &i64| (b - a) as f64);
        Evictor::<i64, ()>::evict_before(&mut e, &mut v, &(), &CTX);
        assert_eq!(v.iter().map(|r| r.value).collect::<Vec<_>>(), vec![95, 100]);
    }
}
