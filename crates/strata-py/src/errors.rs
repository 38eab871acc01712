//! The exception classes (`strata.Error` and one subclass per
//! [`strata::Error`] variant) and the conversion of engine errors to them.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(strata, Error, PyException, "Base class of every error Strata raises.");
create_exception!(strata, IoError, Error, "An operating-system I/O error (disk full, permission ...).");
create_exception!(strata, CorruptionError, Error, "Stored data failed a checksum or could not be decoded.");
create_exception!(strata, InvalidArgumentError, Error, "An option, argument or call is not valid.");
create_exception!(strata, LockedError, Error, "Another process (or handle) has the database open.");
create_exception!(strata, NotADatabaseError, Error, "The directory holds no database.");
create_exception!(
    strata,
    ReadOnlyError,
    Error,
    "An earlier write failed; the database refuses writes until reopened."
);
create_exception!(
    strata,
    NotSupportedError,
    Error,
    "Not supported by this handle (e.g. a write through a read-only open)."
);
create_exception!(strata, KeyspaceNotFoundError, Error, "No keyspace of that name.");
create_exception!(strata, ClosedError, Error, "The database was closed.");
create_exception!(strata, BusyError, Error, "A conflicting operation is in progress.");
create_exception!(strata, TryAgainError, Error, "A transient condition; retrying may succeed.");
create_exception!(strata, TimedOutError, Error, "A wait timed out.");
create_exception!(strata, DeadlockError, Error, "Waiting would have deadlocked.");

/// The Python exception for an engine error.
pub fn to_py(e: strata::Error) -> PyErr {
    use strata::Error as E;
    let msg = e.to_string();
    match e {
        E::Io(_) => IoError::new_err(msg),
        E::Corruption(_) => CorruptionError::new_err(msg),
        E::InvalidArgument(_) => InvalidArgumentError::new_err(msg),
        E::Locked(_) => LockedError::new_err(msg),
        E::NotADatabase(_) => NotADatabaseError::new_err(msg),
        E::ReadOnly(_) => ReadOnlyError::new_err(msg),
        E::NotSupported(_) => NotSupportedError::new_err(msg),
        E::KeyspaceNotFound(_) => KeyspaceNotFoundError::new_err(msg),
        E::Closed => ClosedError::new_err(msg),
        E::Busy(_) => BusyError::new_err(msg),
        E::TryAgain(_) => TryAgainError::new_err(msg),
        E::TimedOut(_) => TimedOutError::new_err(msg),
        E::Deadlock(_) => DeadlockError::new_err(msg),
        // `strata::Error` is non-exhaustive: a variant added later is still a `strata.Error`.
        #[allow(unreachable_patterns)]
        _ => Error::new_err(msg),
    }
}

/// The error of any use of a closed database.
pub fn closed() -> PyErr {
    ClosedError::new_err("the database is closed")
}

/// Adds the exception classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<Error>())?;
    m.add("IoError", py.get_type::<IoError>())?;
    m.add("CorruptionError", py.get_type::<CorruptionError>())?;
    m.add("InvalidArgumentError", py.get_type::<InvalidArgumentError>())?;
    m.add("LockedError", py.get_type::<LockedError>())?;
    m.add("NotADatabaseError", py.get_type::<NotADatabaseError>())?;
    m.add("ReadOnlyError", py.get_type::<ReadOnlyError>())?;
    m.add("NotSupportedError", py.get_type::<NotSupportedError>())?;
    m.add("KeyspaceNotFoundError", py.get_type::<KeyspaceNotFoundError>())?;
    m.add("ClosedError", py.get_type::<ClosedError>())?;
    m.add("BusyError", py.get_type::<BusyError>())?;
    m.add("TryAgainError", py.get_type::<TryAgainError>())?;
    m.add("TimedOutError", py.get_type::<TimedOutError>())?;
    m.add("DeadlockError", py.get_type::<DeadlockError>())?;
    Ok(())
}
