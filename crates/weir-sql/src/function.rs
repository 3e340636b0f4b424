//! User-defined scalar functions: registered by the program that embeds a
//! [`Session`](crate::Session) (Rust closures over [`Value`]s, with a
//! declared result type), callable by their name, and bound to other
//! names with Flink's `CREATE FUNCTION name AS 'identifier'`. While a
//! query is planned its session's functions are the ones expressions can
//! call.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::types::SqlType;
use crate::value::Value;

/// A function's body: its value for the arguments' values, or the error
/// that fails the job.
pub type FunctionBody = Arc<dyn Fn(&[Value]) -> Result<Value, String> + Send + Sync>;

/// A scalar function: its result type and its body.
#[derive(Clone)]
pub(crate) struct ScalarFunction {
    pub result: SqlType,
    pub body: FunctionBody,
}

/// A session's functions, by lower-cased name (with the name as
/// written).
#[derive(Clone, Default)]
pub(crate) struct Functions(BTreeMap<String, (String, ScalarFunction)>);

impl Functions {
    /// The functions every session has: the Nexmark suite's user function,
    /// under the identifier its queries create it with.
    pub fn builtin() -> Functions {
        let mut functions = Functions::default();
        crate::nexmark::register_functions(&mut functions);
        functions
    }

    pub fn add(&mut self, name: &str, function: ScalarFunction) {
        self.0
            .insert(name.to_lowercase(), (name.to_string(), function));
    }

    pub fn get(&self, name: &str) -> Option<&ScalarFunction> {
        self.0.get(&name.to_lowercase()).map(|(_, f)| f)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.values().map(|(name, _)| name.as_str())
    }

    /// Removes the function `name`; whether there was one.
    pub fn remove(&mut self, name: &str) -> bool {
        self.0.remove(&name.to_lowercase()).is_some()
    }
}

thread_local! {
    static PLANNING: RefCell<Functions> = RefCell::new(Functions::default());
}

/// Runs `plan` with `functions` callable from the expressions it compiles.
pub(crate) fn with_functions<R>(functions: &Functions, plan: impl FnOnce() -> R) -> R {
    let previous = PLANNING.replace(functions.clone());
    let result = plan();
    PLANNING.set(previous);
    result
}

/// The function `name` of the query being planned.
pub(crate) fn lookup(name: &str) -> Option<ScalarFunction> {
    PLANNING.with_borrow(|f| f.get(name).cloned())
}
