pub mod sigv4;
