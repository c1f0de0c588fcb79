//! The renderer: decodes an upload (JPEG, PNG or WebP, whatever its name or declared type
//! said), refuses a huge bitmap from its header before decoding a pixel, turns it upright
//! (EXIF orientation), flattens transparency onto white and encodes each size as a baseline
//! JPEG. Nothing of the upload's metadata (EXIF, GPS, ICC, XMP) is carried over: the sizes
//! are new files made from pixels only.

use std::io::Cursor;

use image::imageops::FilterType;
use image::{DynamicImage, ImageDecoder, ImageFormat, ImageReader, Limits, RgbImage};
use sha2::{Digest, Sha256};

use bouquet_domain::photo::{
    check_dimensions, variant_path, variant_sizes, PhotoVariant, Refusal, MAX_PIXELS,
};

use crate::{Rendered, RenderedVariant, Renderer};

/// JPEG quality of every size: small files, no visible blocking on photographs of flowers.
pub const JPEG_QUALITY: u8 = 80;

#[derive(Clone, Copy, Debug, Default)]
pub struct ImageRenderer;

impl Renderer for ImageRenderer {
    fn render(&self, bytes: &[u8]) -> Result<Rendered, Refusal> {
        let image = decode(bytes)?;
        let (width, height) = (image.width(), image.height());
        let digest = hex::encode(&Sha256::digest(bytes)[..16]);
        // Each size from the next larger one: a 24-megapixel source is scaled down once.
        let mut variants = Vec::new();
        let mut source = image;
        for (w, h) in variant_sizes(width, height).into_iter().rev() {
            let scaled = if (w, h) == (source.width(), source.height()) {
                source.clone()
            } else {
                source.resize_exact(w, h, FilterType::Triangle)
            };
            let bytes = encode(&scaled)?;
            let path = variant_path(&digest, w);
            variants.push(RenderedVariant {
                key: path.trim_start_matches('/').to_owned(),
                variant: PhotoVariant {
                    width: w,
                    height: h,
                    path,
                },
                bytes,
            });
            source = scaled;
        }
        variants.reverse();
        let largest = &variants.last().expect("at least one size").variant;
        Ok(Rendered {
            digest,
            width: largest.width,
            height: largest.height,
            variants,
        })
    }
}

fn decode(bytes: &[u8]) -> Result<DynamicImage, Refusal> {
    let reader = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|_| Refusal::Unreadable)?;
    match reader.format() {
        Some(ImageFormat::Jpeg | ImageFormat::Png | ImageFormat::WebP) => {}
        _ => return Err(Refusal::NotAnImage),
    }
    let mut reader = reader;
    let mut limits = Limits::default();
    limits.max_image_width = Some(60_000);
    limits.max_image_height = Some(60_000);
    // The decoded bitmap as RGBA, plus room for one scaled copy.
    limits.max_alloc = Some(MAX_PIXELS * 4 * 2);
    reader.limits(limits);
    let mut decoder = reader.into_decoder().map_err(|_| Refusal::Unreadable)?;
    let (width, height) = decoder.dimensions();
    check_dimensions(width, height)?;
    let orientation = decoder.orientation().ok();
    let mut image = DynamicImage::from_decoder(decoder).map_err(|error| match error {
        image::ImageError::Limits(_) => Refusal::TooManyPixels {
            width,
            height,
            limit: MAX_PIXELS,
        },
        _ => Refusal::Unreadable,
    })?;
    if let Some(orientation) = orientation {
        image.apply_orientation(orientation);
    }
    Ok(image)
}

/// RGB only: transparent pixels become white, as on the storefront's cards.
fn flatten(image: &DynamicImage) -> RgbImage {
    if !image.color().has_alpha() {
        return image.to_rgb8();
    }
    let rgba = image.to_rgba8();
    RgbImage::from_fn(rgba.width(), rgba.height(), |x, y| {
        let [r, g, b, a] = rgba.get_pixel(x, y).0;
        let over_white =
            |c: u8| ((u16::from(c) * u16::from(a) + 255 * (255 - u16::from(a))) / 255) as u8;
        image::Rgb([over_white(r), over_white(g), over_white(b)])
    })
}

fn encode(image: &DynamicImage) -> Result<Vec<u8>, Refusal> {
    let mut out = Vec::new();
    let encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, JPEG_QUALITY);
    flatten(image)
        .write_with_encoder(encoder)
        .map_err(|_| Refusal::Unreadable)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::{ImageEncoder, Rgba, RgbaImage};

    fn png(width: u32, height: u32) -> Vec<u8> {
        let image = RgbaImage::from_fn(width, height, |x, y| {
            Rgba([
                (x % 256) as u8,
                (y % 256) as u8,
                120,
                if x < 4 { 0 } else { 255 },
            ])
        });
        let mut out = Vec::new();
        image::codecs::png::PngEncoder::new(&mut out)
            .write_image(&image, width, height, image::ExtendedColorType::Rgba8)
            .unwrap();
        out
    }

    /// A JPEG carrying an EXIF segment with a GPS position (APP1 after SOI).
    fn jpeg_with_gps(width: u32, height: u32) -> Vec<u8> {
        let image = RgbImage::from_pixel(width, height, image::Rgb([200, 40, 90]));
        let mut plain = Vec::new();
        image::codecs::jpeg::JpegEncoder::new(&mut plain)
            .write_image(&image, width, height, image::ExtendedColorType::Rgb8)
            .unwrap();
        let exif: &[u8] = b"Exif\0\0MM\0*\0\0\0\x08GPSLatitude=52.3676N;GPSLongitude=4.9041E";
        let mut app1 = vec![0xFF, 0xE1];
        app1.extend_from_slice(&((exif.len() + 2) as u16).to_be_bytes());
        app1.extend_from_slice(exif);
        let mut out = plain[..2].to_vec();
        out.extend_from_slice(&app1);
        out.extend_from_slice(&plain[2..]);
        out
    }

    fn contains(haystack: &[u8], needle: &[u8]) -> bool {
        haystack.windows(needle.len()).any(|w| w == needle)
    }

    #[test]
    fn an_upload_becomes_jpeg_sizes_without_its_metadata() {
        let upload = jpeg_with_gps(1600, 1200);
        assert!(contains(&upload, b"GPSLatitude"), "the fixture carries GPS");
        let rendered = ImageRenderer.render(&upload).unwrap();
        let widths: Vec<u32> = rendered.variants.iter().map(|v| v.variant.width).collect();
        assert_eq!(widths, [320, 640, 1280]);
        assert_eq!((rendered.width, rendered.height), (1280, 960));
        for variant in &rendered.variants {
            assert!(!contains(&variant.bytes, b"GPS"), "{}", variant.key);
            assert!(!contains(&variant.bytes, b"Exif"), "{}", variant.key);
            let decoded = image::load_from_memory(&variant.bytes).unwrap();
            assert_eq!(
                (decoded.width(), decoded.height()),
                (variant.variant.width, variant.variant.height)
            );
            assert_eq!(
                variant.key,
                format!("photos/{}/{}.jpg", rendered.digest, variant.variant.width)
            );
        }
        // The same bytes always give the same keys (a redelivered event writes nothing new).
        assert_eq!(
            ImageRenderer.render(&upload).unwrap().digest,
            rendered.digest
        );
    }

    #[test]
    fn transparency_is_flattened_onto_white_and_small_images_are_not_enlarged() {
        let rendered = ImageRenderer.render(&png(200, 100)).unwrap();
        assert_eq!(rendered.variants.len(), 1);
        let decoded = image::load_from_memory(&rendered.variants[0].bytes)
            .unwrap()
            .to_rgb8();
        let corner = decoded.get_pixel(0, 50).0;
        assert!(
            corner.iter().all(|c| *c > 230),
            "transparent became white: {corner:?}"
        );
    }

    #[test]
    fn what_is_not_an_image_is_refused() {
        assert_eq!(
            ImageRenderer.render(b"%PDF-1.7 not a photo"),
            Err(Refusal::NotAnImage)
        );
        assert_eq!(
            ImageRenderer.render(b"GIF89a\x01\x00\x01\x00"),
            Err(Refusal::NotAnImage)
        );
        let mut cut = jpeg_with_gps(64, 64);
        cut.truncate(cut.len() / 3);
        assert_eq!(ImageRenderer.render(&cut), Err(Refusal::Unreadable));
    }

    #[test]
    fn a_huge_bitmap_is_refused_from_its_header() {
        // A valid PNG header declaring 30,000 × 30,000 pixels (900 megapixels, 3.6 GB as RGBA)
        // in a file of a few bytes: refused before any pixel is decoded.
        let mut bomb = png(1, 1);
        bomb[16..20].copy_from_slice(&30_000u32.to_be_bytes());
        bomb[20..24].copy_from_slice(&30_000u32.to_be_bytes());
        let crc = crc32fast::hash(&bomb[12..29]);
        bomb[29..33].copy_from_slice(&crc.to_be_bytes());
        assert!(matches!(
            ImageRenderer.render(&bomb),
            Err(Refusal::TooManyPixels {
                width: 30_000,
                height: 30_000,
                ..
            })
        ));
    }
}
