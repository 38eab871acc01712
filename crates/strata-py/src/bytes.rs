//! Keys and values from Python: any object with the buffer protocol,
//! borrowed without a copy when it is `bytes` (immutable, so it may be read
//! with the GIL released); `str` refused, as plyvel and rocksdict do.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyMemoryView, PyString};

/// Bytes taken from a Python object.
pub enum Buf<'a> {
    /// A `bytes` object's own storage.
    Borrowed(&'a [u8]),
    /// A copy of a mutable buffer (bytearray, memoryview, array ...).
    Owned(Vec<u8>),
}

impl AsRef<[u8]> for Buf<'_> {
    fn as_ref(&self) -> &[u8] {
        match self {
            Buf::Borrowed(b) => b,
            Buf::Owned(v) => v,
        }
    }
}

/// The bytes of `obj`, a key or value (`what` names it in the error).
pub fn buf<'a>(obj: &'a Bound<'_, PyAny>, what: &str) -> PyResult<Buf<'a>> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(Buf::Borrowed(b.as_bytes()));
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok(Buf::Owned(b.to_vec()));
    }
    if obj.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err(format!("{what} must be bytes-like, not str (encode it first)")));
    }
    // Any other buffer: a copy taken through a memoryview (a mutable buffer
    // could change while the GIL is released).
    match PyMemoryView::from(obj) {
        Ok(view) => Ok(Buf::Owned(view.call_method0("tobytes")?.cast::<PyBytes>()?.as_bytes().to_vec())),
        Err(_) => Err(PyTypeError::new_err(format!(
            "{what} must be bytes-like (bytes, bytearray, memoryview ...), not {}",
            obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "this type".into())
        ))),
    }
}

/// `buf` of an optional argument.
pub fn opt_buf<'a>(obj: Option<&'a Bound<'_, PyAny>>, what: &str) -> PyResult<Option<Buf<'a>>> {
    obj.filter(|o| !o.is_none()).map(|o| buf(o, what)).transpose()
}

/// A new `bytes` object.
pub fn py_bytes<'py>(py: Python<'py>, b: &[u8]) -> Bound<'py, PyBytes> {
    PyBytes::new(py, b)
}
