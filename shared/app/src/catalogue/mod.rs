//! What is for sale: listing and changing bouquets, and their photos.

pub mod bouquets;
pub mod listing;
pub mod photos;
