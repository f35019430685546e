//! The Python binding of tantivy-simhash: a thin layer over the library's public API (and its
//! `store` module, the indexes the command line makes), built by maturin into
//! `tantivy_simhash._native`. The Python package (`tantivy_simhash/`) re-exports it, with the
//! type stubs and the docs.
//!
//! Rules every function here keeps: arguments are converted to Rust values while the GIL is held,
//! the work runs with the GIL released (`Python::detach`), and every failure becomes a Python
//! exception (`tantivy_simhash.Error` for the crate's errors, `ValueError` / `TypeError` for bad
//! arguments); nothing panics on user input.

use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use rayon::prelude::*;

mod index;
mod lean;
mod results;
mod rule;
mod store;
mod writer;

pyo3::create_exception!(
    tantivy_simhash,
    Error,
    PyException,
    "An error of the index or the crate (a damaged or mismatched index, an I/O or tantivy \
     failure); the message says what was found and what to do."
);

/// Why a call failed, before it becomes a Python exception.
pub(crate) enum Failure {
    /// A bad argument: `ValueError`.
    Value(String),
    /// A problem of the index: `tantivy_simhash.Error`.
    Index(String),
    /// An error of the crate: `tantivy_simhash.Error` with the crate's message.
    Crate(tantivy_simhash::Error),
}

impl Failure {
    pub(crate) fn message(&self) -> String {
        match self {
            Failure::Value(m) | Failure::Index(m) => m.clone(),
            Failure::Crate(e) => e.to_string(),
        }
    }
}

impl From<tantivy_simhash::Error> for Failure {
    fn from(e: tantivy_simhash::Error) -> Self {
        match e {
            // The store's own errors: a bad setting is a bad argument, the rest the index's.
            tantivy_simhash::Error::Setting(m) | tantivy_simhash::Error::Request(m) => {
                Failure::Value(m)
            }
            tantivy_simhash::Error::Store(m) => Failure::Index(m),
            other => Failure::Crate(other),
        }
    }
}

impl From<tantivy::TantivyError> for Failure {
    fn from(e: tantivy::TantivyError) -> Self {
        Failure::Crate(e.into())
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        Failure::Crate(e.into())
    }
}

impl From<Failure> for PyErr {
    fn from(f: Failure) -> PyErr {
        match f {
            Failure::Value(m) => PyValueError::new_err(m),
            Failure::Index(m) => Error::new_err(m),
            Failure::Crate(e) => Error::new_err(e.to_string()),
        }
    }
}

/// How a text becomes a 64-bit fingerprint: normalisation, tokens, weights and hash.
///
/// ``Scheme()`` is the crate's default (words; Chinese segmented by jieba); ``language`` takes
/// the command line's ``--language`` values: ``"auto"``, ``"han-chars"`` or a stemming
/// language such as ``"english"``. Fingerprints of two schemes cannot be compared.
#[pyclass(module = "tantivy_simhash", frozen)]
pub(crate) struct Scheme {
    pub(crate) scheme: tantivy_simhash::Scheme,
    pub(crate) language: String,
}

#[pymethods]
impl Scheme {
    #[new]
    #[pyo3(signature = (language = "auto"))]
    fn new(language: &str) -> PyResult<Self> {
        Ok(Scheme {
            scheme: store::scheme_for(language)?,
            language: language.to_string(),
        })
    }

    /// The fingerprint of ``text`` as an unsigned 64-bit int. Cost: one analysis of the text
    /// (the GIL is released meanwhile).
    fn fingerprint(&self, py: Python<'_>, text: &str) -> u64 {
        let text = text.to_owned();
        py.detach(|| self.scheme.fingerprint(&text).0)
    }

    /// The fingerprints of many texts, computed in parallel with the GIL released.
    fn fingerprints(&self, py: Python<'_>, texts: &Bound<'_, PyAny>) -> PyResult<Vec<u64>> {
        let mut owned = Vec::new();
        for item in texts.try_iter()? {
            owned.push(item?.extract::<String>()?);
        }
        Ok(py.detach(|| {
            owned
                .par_iter()
                .map(|t| self.scheme.fingerprint(t).0)
                .collect()
        }))
    }

    /// The scheme's stable identifier (what an index records).
    #[getter]
    fn id(&self) -> String {
        self.scheme.id().to_string()
    }

    /// The language it was made for.
    #[getter]
    fn language(&self) -> String {
        self.language.clone()
    }

    fn __repr__(&self) -> String {
        format!("Scheme(language={:?})", self.language)
    }
}

/// The Hamming distance between two fingerprints (the number of bits that differ, 0 to 64).
#[pyfunction]
fn distance(a: u64, b: u64) -> u32 {
    tantivy_simhash::Fingerprint(a).distance(tantivy_simhash::Fingerprint(b))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("Error", m.py().get_type::<Error>())?;
    m.add_class::<Scheme>()?;
    m.add_function(wrap_pyfunction!(distance, m)?)?;
    index::register(m)?;
    writer::register(m)?;
    rule::register(m)?;
    lean::register(m)?;
    Ok(())
}
