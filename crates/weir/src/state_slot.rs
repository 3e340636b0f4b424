//! Values whose type only the user's function knows (trigger state,
//! broadcast state), kept typed while the job runs and written to
//! checkpoints as bytes.
//!
//! A restored slot holds bytes until its owner asks for it with a type:
//! the first `get_or_default::<S>()` decodes them as `S`.

use std::any::Any;

use serde::de::DeserializeOwned;
use serde::Serialize;
use weir_state::{decode_value, encode_value, StateError};

trait Erased: Send {
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
    fn encode(&self) -> Result<Vec<u8>, StateError>;
}

impl<S: Serialize + Send + 'static> Erased for S {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
    fn encode(&self) -> Result<Vec<u8>, StateError> {
        encode_value(self)
    }
}

enum Content {
    Typed(Box<dyn Erased>),
    Encoded(Vec<u8>),
}

/// A value of some serializable type, or nothing.
#[derive(Default)]
pub struct StateSlot(Option<Content>);

impl std::fmt::Debug for StateSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            None => f.write_str("StateSlot(empty)"),
            Some(Content::Typed(_)) => f.write_str("StateSlot(value)"),
            Some(Content::Encoded(b)) => write!(f, "StateSlot({} restored bytes)", b.len()),
        }
    }
}

impl StateSlot {
    /// Whether the slot holds nothing.
    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// Empties the slot.
    pub fn clear(&mut self) {
        self.0 = None;
    }

    /// The value as an `S`, created with `Default` if the slot is empty or
    /// holds another type. Restored bytes are decoded as `S`; bytes that
    /// are not an `S` fail the task (the state's type changed).
    pub fn get_or_default<S>(&mut self) -> &mut S
    where
        S: Default + Serialize + DeserializeOwned + Send + 'static,
    {
        let fresh = match self.0.take() {
            Some(Content::Typed(b)) if b.as_any().is::<S>() => Content::Typed(b),
            Some(Content::Encoded(bytes)) => match decode_value::<S>(&bytes) {
                Ok(v) => Content::Typed(Box::new(v)),
                Err(e) => panic!(
                    "restored window or trigger state is not a {}: {e}",
                    std::any::type_name::<S>()
                ),
            },
            _ => Content::Typed(Box::new(S::default())),
        };
        let Content::Typed(b) = self.0.insert(fresh) else {
            unreachable!("just stored a typed value")
        };
        match b.as_any_mut().downcast_mut::<S>() {
            Some(s) => s,
            None => unreachable!("just stored an S"),
        }
    }

    /// As [`get_or_default`](Self::get_or_default), but `None` instead of
    /// replacing a value of another type.
    pub fn get_or_default_checked<S>(&mut self) -> Option<&mut S>
    where
        S: Default + Serialize + DeserializeOwned + Send + 'static,
    {
        if let Some(Content::Typed(b)) = &self.0 {
            if !b.as_any().is::<S>() {
                return None;
            }
        }
        Some(self.get_or_default())
    }

    /// Takes the value out if it is an `S` (or restored bytes of one).
    pub fn take<S: DeserializeOwned + 'static>(&mut self) -> Option<S> {
        match self.0.take()? {
            Content::Typed(b) => b.into_any().downcast::<S>().ok().map(|b| *b),
            Content::Encoded(bytes) => decode_value(&bytes).ok(),
        }
    }

    /// The value as bytes, for a checkpoint.
    pub(crate) fn encode(&self) -> Result<Option<Vec<u8>>, StateError> {
        match &self.0 {
            None => Ok(None),
            Some(Content::Typed(b)) => b.encode().map(Some),
            Some(Content::Encoded(bytes)) => Ok(Some(bytes.clone())),
        }
    }

    /// A slot holding restored bytes.
    pub(crate) fn restored(bytes: Option<Vec<u8>>) -> Self {
        StateSlot(bytes.map(Content::Encoded))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_survives_encoding_and_is_typed_again_on_use() -> Result<(), StateError> {
        let mut slot = StateSlot::default();
        *slot.get_or_default::<u64>() += 41;
        *slot.get_or_default::<u64>() += 1;
        let mut restored = StateSlot::restored(slot.encode()?);
        assert_eq!(*restored.get_or_default::<u64>(), 42);
        assert_eq!(restored.take::<u64>(), Some(42));
        assert!(restored.is_empty());
        assert_eq!(StateSlot::default().encode()?, None);
        Ok(())
    }

    #[test]
    fn another_type_replaces_the_value() {
        let mut slot = StateSlot::default();
        *slot.get_or_default::<u64>() = 7;
        assert_eq!(*slot.get_or_default::<Option<i64>>(), None);
        assert_eq!(slot.take::<u64>(), None);
    }
}
