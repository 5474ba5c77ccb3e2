//! The GCS store over the model.
