//! Bouquet photos through the emulator's S3 and SQS as deployed: the vendor's signed POST
//! policy, the browser's form upload (S3 refuses what breaks the policy), the bucket's event
//! on the photo queue (the template's queue, redrive and mapping), the photo function in
//! process, the sizes in the photo bucket, and where a failed event lands.

use std::time::Duration;

use aws_sdk_sqs::types::QueueAttributeName;
use serde_json::{json, Value};

use bouquet_app::domain::Clock;
use devstack::lambda::Resolver;
use system_tests::{by_customer, by_vendor, fixture, PathParams, TestCloud};

/// The template's photo queue and dead-letter queue for this test, the upload bucket's events
/// sent to it, and the template's mapping of it to the photo function in process.
struct PhotoPipeline {
    queue_url: String,
    dead_letter_url: String,
    mapping: devstack::queues::QueueMapping,
    sqs: aws_sdk_sqs::Client,
}

async fn pipeline(
    cloud: &TestCloud,
    functions: system_tests::in_process::InProcess,
) -> PhotoPipeline {
    // S3 checks a policy's expiration against its own clock, the wall clock: the test's clock
    // moves to it.
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    let test_now = std::time::Duration::from_millis(cloud.clock.now().as_millis() as u64);
    if wall > test_now {
        cloud.clock.advance(wall - test_now);
    }
    let buckets = cloud.photos().await.clone();
    let template = bouquet_template::Template::repository().unwrap();
    let sdk = bouquet_testkit::emulator_sdk_config().await;
    let sqs = aws_sdk_sqs::Client::new(&sdk);
    let mut names = devstack::provision::Names::new();
    for id in ["PhotoDeadLetterQueue", "PhotoQueue"] {
        devstack::provision::create_queue(
            &sqs,
            &template,
            id,
            &format!("{}-{id}", cloud.table),
            &mut names,
        )
        .await
        .unwrap();
    }
    let queue_url = names["PhotoQueue"].clone();
    // A failed message comes back after a second, not the template's six minutes.
    sqs.set_queue_attributes()
        .queue_url(&queue_url)
        .attributes(QueueAttributeName::VisibilityTimeout, "1")
        .send()
        .await
        .unwrap();
    names.insert("PhotoUploadBucket".into(), buckets.uploads.clone());
    devstack::provision::configure_bucket_notifications(
        &cloud.s3,
        &template,
        "PhotoUploadBucket",
        &names,
    )
    .await
    .unwrap();
    let function = template.resource("ProcessBouquetPhotosFunction").unwrap();
    let mapping = devstack::queues::QueueMapping::new(
        "process-bouquet-photos".into(),
        queue_url.clone(),
        names["PhotoQueue.Arn"].clone(),
        &function["Properties"]["Events"]["Uploads"],
        functions.invoker("process-bouquet-photos").unwrap(),
        sqs.clone(),
    );
    PhotoPipeline {
        queue_url,
        dead_letter_url: names["PhotoDeadLetterQueue"].clone(),
        mapping,
        sqs,
    }
}

impl PhotoPipeline {
    /// The same queues, mapped to `functions` (a function redeployed).
    fn remapped(&self, functions: system_tests::in_process::InProcess) -> Self {
        let template = bouquet_template::Template::repository().unwrap();
        let function = template.resource("ProcessBouquetPhotosFunction").unwrap();
        Self {
            queue_url: self.queue_url.clone(),
            dead_letter_url: self.dead_letter_url.clone(),
            mapping: devstack::queues::QueueMapping::new(
                "process-bouquet-photos".into(),
                self.queue_url.clone(),
                self.mapping.queue_arn.clone(),
                &function["Properties"]["Events"]["Uploads"],
                functions.invoker("process-bouquet-photos").unwrap(),
                self.sqs.clone(),
            ),
            sqs: self.sqs.clone(),
        }
    }

    /// Polls as Lambda's mapping does until `done` holds (or 20 s pass).
    async fn run_until(&self, mut done: impl AsyncFnMut() -> bool) {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while std::time::Instant::now() < deadline {
            self.mapping.poll().await.unwrap();
            if done().await {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("the photo pipeline did not get there in 20 s");
    }

    async fn count(&self, queue: &str) -> usize {
        let attributes = self
            .sqs
            .get_queue_attributes()
            .queue_url(queue)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
            .send()
            .await
            .unwrap()
            .attributes
            .unwrap_or_default();
        attributes
            .values()
            .map(|v| v.parse::<usize>().unwrap())
            .sum()
    }
}

/// A JPEG of `width` × `height` with an EXIF segment that names a GPS position.
fn jpeg_with_gps(width: u32, height: u32) -> Vec<u8> {
    use image::ImageEncoder;
    let pixels: Vec<u8> = (0..width * height)
        .flat_map(|i| [(i % 200) as u8, 120, 60])
        .collect();
    let mut plain = Vec::new();
    image::codecs::jpeg::JpegEncoder::new(&mut plain)
        .write_image(&pixels, width, height, image::ExtendedColorType::Rgb8)
        .unwrap();
    let exif: &[u8] = b"Exif\0\0MM\0*\0\0\0\x08GPSLatitude=48.8566N;GPSLongitude=2.3522E";
    let mut out = plain[..2].to_vec();
    out.extend_from_slice(&[0xFF, 0xE1]);
    out.extend_from_slice(&((exif.len() + 2) as u16).to_be_bytes());
    out.extend_from_slice(exif);
    out.extend_from_slice(&plain[2..]);
    out
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Posts `file` as a browser form would: the ticket's fields (with `changes`), then the file.
async fn post_form(ticket: &Value, file: &[u8], changes: &[(&str, &str)]) -> (u16, String) {
    use http_body_util::BodyExt;
    let mut fields = ticket["fields"].clone();
    for (name, value) in changes {
        fields[*name] = json!(value);
    }
    let (content_type, body) = devstack::seed::form_upload(&fields, file);
    let client: hyper_util::client::legacy::Client<_, http_body_util::Full<bytes_of::Bytes>> =
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .build_http();
    let request = hyper::Request::post(ticket["url"].as_str().unwrap())
        .header("content-type", content_type)
        .body(http_body_util::Full::new(bytes_of::Bytes::from(body)))
        .unwrap();
    let answer = client.request(request).await.unwrap();
    let status = answer.status().as_u16();
    let text = answer.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&text).into_owned())
}

use hyper::body as bytes_of;

async fn ticket(
    cloud: &TestCloud,
    vendor: &str,
    bouquet: &str,
    content_type: &str,
) -> system_tests::ApiResponse {
    cloud
        .send(
            by_vendor("request-photo-upload", vendor)
                .bouquet_id(bouquet)
                .json(json!({ "contentType": content_type })),
        )
        .await
}

async fn upload_status(cloud: &TestCloud, vendor: &str, bouquet: &str, upload: &str) -> Value {
    let got = cloud
        .send(
            by_vendor("get-photo-upload", vendor)
                .bouquet_id(bouquet)
                .path("uploadId", upload),
        )
        .await;
    assert_eq!(got.status, 200, "{:?}", got.body);
    got.body
}

async fn bouquet_photo(cloud: &TestCloud, bouquet: &str) -> Value {
    cloud
        .send(fixture("get-bouquet").bouquet_id(bouquet))
        .await
        .body["photo"]
        .clone()
}

async fn photo_events(cloud: &TestCloud) -> usize {
    cloud.event_count("BouquetPhotoChanged").await
}

#[tokio::test]
async fn an_uploaded_photo_shows_on_its_bouquet_in_its_sizes_without_its_metadata_once() {
    let cloud = TestCloud::new().await;
    let photos = pipeline(&cloud, cloud.in_process(cloud.app.clone())).await;
    let vendor = cloud.vendor("Bloom").await;
    let bouquet = cloud.bouquet(&vendor, "24.50").await;
    let allowed = ticket(&cloud, &vendor, &bouquet, "image/jpeg").await;
    assert_eq!(allowed.status, 201, "{:?}", allowed.body);
    let upload = allowed.body["uploadId"].as_str().unwrap().to_owned();
    assert_eq!(
        allowed.header("location"),
        Some(format!("/v1/bouquets/{bouquet}/photo-uploads/{upload}").as_str())
    );
    assert_eq!(allowed.body["maxBytes"], 5 * 1024 * 1024);
    let file = jpeg_with_gps(1600, 1000);
    assert!(contains(&file, b"GPSLatitude"));
    let (status, body) = post_form(&allowed.body, &file, &[]).await;
    assert_eq!(status, 204, "{body}");
    assert_eq!(
        upload_status(&cloud, &vendor, &bouquet, &upload).await["status"],
        "pending"
    );

    photos
        .run_until(async || {
            upload_status(&cloud, &vendor, &bouquet, &upload).await["status"] == "ready"
        })
        .await;
    let photo = bouquet_photo(&cloud, &bouquet).await;
    assert_eq!(photo["uploadId"], upload.as_str());
    assert_eq!(
        (photo["width"].as_u64(), photo["height"].as_u64()),
        (Some(1280), Some(800))
    );
    let variants = photo["variants"].as_array().unwrap();
    assert_eq!(
        variants
            .iter()
            .map(|v| v["width"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        [320, 640, 1280]
    );
    for variant in variants {
        let key = variant["path"].as_str().unwrap().trim_start_matches('/');
        let object = cloud
            .s3
            .get_object()
            .bucket(&cloud.photo_buckets.photos)
            .key(key)
            .send()
            .await
            .unwrap();
        assert_eq!(object.content_type(), Some("image/jpeg"));
        assert_eq!(
            object.cache_control(),
            Some("public, max-age=31536000, immutable")
        );
        let bytes = object.body.collect().await.unwrap().into_bytes();
        assert_eq!(&bytes[..2], &[0xFF, 0xD8]);
        assert!(
            !contains(&bytes, b"GPS") && !contains(&bytes, b"Exif"),
            "{key} carries no metadata"
        );
    }
    let left = cloud
        .s3
        .list_objects_v2()
        .bucket(&cloud.photo_buckets.uploads)
        .send()
        .await
        .unwrap();
    assert_eq!(
        left.key_count(),
        Some(0),
        "the upload is deleted once processed"
    );
    assert_eq!(photo_events(&cloud).await, 1);

    // S3 delivers each event at least once: the same event twice more changes nothing.
    let event = json!({"Records": [{
        "eventVersion": "2.1", "eventSource": "aws:s3", "awsRegion": "eu-west-1",
        "eventName": "ObjectCreated:Post",
        "s3": {"s3SchemaVersion": "1.0", "bucket": {"name": cloud.photo_buckets.uploads},
               "object": {"key": format!("uploads/{upload}"), "size": file.len()}}
    }]});
    for _ in 0..2 {
        photos
            .sqs
            .send_message()
            .queue_url(&photos.queue_url)
            .message_body(event.to_string())
            .send()
            .await
            .unwrap();
    }
    photos
        .run_until(async || photos.count(&photos.queue_url).await == 0)
        .await;
    assert_eq!(
        photo_events(&cloud).await,
        1,
        "one event whatever the redeliveries"
    );
    assert_eq!(photos.count(&photos.dead_letter_url).await, 0);
    assert_eq!(bouquet_photo(&cloud, &bouquet).await, photo);
}

#[tokio::test]
async fn bad_uploads_are_refused_where_they_arrive_and_the_old_photo_stays() {
    let cloud = TestCloud::new().await;
    let photos = pipeline(&cloud, cloud.in_process(cloud.app.clone())).await;
    let vendor = cloud.vendor("Bloom").await;
    let other = cloud.vendor("Thorn").await;
    let bouquet = cloud.bouquet(&vendor, "24.50").await;

    // The route: a type that is not taken, another vendor, a customer, no such bouquet.
    let gif = ticket(&cloud, &vendor, &bouquet, "image/gif").await;
    assert_eq!(
        (gif.status, gif.body["errors"][0]["field"].as_str()),
        (400, Some("contentType"))
    );
    assert_eq!(
        ticket(&cloud, &other, &bouquet, "image/png").await.status,
        403
    );
    let customer = cloud
        .send(
            by_customer("request-photo-upload", "ana")
                .bouquet_id(&bouquet)
                .json(json!({"contentType": "image/png"})),
        )
        .await;
    assert_eq!(customer.status, 403);
    assert_eq!(
        ticket(&cloud, &vendor, "01JF0000000000000000000000", "image/png")
            .await
            .status,
        404
    );

    // A first photo, shown.
    let first = ticket(&cloud, &vendor, &bouquet, "image/jpeg").await.body;
    assert_eq!(
        post_form(&first, &jpeg_with_gps(400, 300), &[]).await.0,
        204
    );
    let first_id = first["uploadId"].as_str().unwrap().to_owned();
    photos
        .run_until(async || {
            upload_status(&cloud, &vendor, &bouquet, &first_id).await["status"] == "ready"
        })
        .await;
    let shown = bouquet_photo(&cloud, &bouquet).await;
    assert_eq!(shown["uploadId"], first_id.as_str());

    // S3 refuses a file over the policy's size, and a form whose type or key was changed.
    let big = ticket(&cloud, &vendor, &bouquet, "image/png").await.body;
    let (status, body) = post_form(&big, &vec![0x89; 5 * 1024 * 1024 + 1], &[]).await;
    assert_eq!(
        (status, body.contains("EntityTooLarge")),
        (400, true),
        "{body}"
    );
    let (status, body) = post_form(&big, b"<svg/>", &[("Content-Type", "image/svg+xml")]).await;
    assert_eq!(
        (status, body.contains("AccessDenied")),
        (403, true),
        "{body}"
    );
    let (status, _) = post_form(&big, b"x", &[("key", "uploads/01JF0000000000000000000000")]).await;
    assert_eq!(status, 403);

    // A file the policy lets through but that is not an image: the photo function refuses it.
    let fake = ticket(&cloud, &vendor, &bouquet, "image/png").await.body;
    assert_eq!(
        post_form(&fake, b"%PDF-1.7 not a photo at all", &[])
            .await
            .0,
        204
    );
    let fake_id = fake["uploadId"].as_str().unwrap().to_owned();
    photos
        .run_until(async || {
            upload_status(&cloud, &vendor, &bouquet, &fake_id).await["status"] == "rejected"
        })
        .await;
    let status = upload_status(&cloud, &vendor, &bouquet, &fake_id).await;
    assert_eq!(status["refusal"]["code"], "photo.not_an_image");
    assert!(status["refusal"]["message"]
        .as_str()
        .unwrap()
        .contains("not a JPEG, PNG or WebP"));
    assert_eq!(
        bouquet_photo(&cloud, &bouquet).await,
        shown,
        "the old photo stays"
    );
    assert_eq!(photo_events(&cloud).await, 1);
    assert_eq!(
        photos.count(&photos.dead_letter_url).await,
        0,
        "a refusal is not a failure"
    );
    // Another vendor reads nothing of the upload.
    let foreign = cloud
        .send(
            by_vendor("get-photo-upload", &other)
                .bouquet_id(&bouquet)
                .path("uploadId", &fake_id),
        )
        .await;
    // Upload ids are not public: another vendor is told it does not exist (404), not 403.
    assert_eq!(foreign.status, 404, "{}", foreign.body);
}

#[tokio::test]
async fn an_upload_event_that_keeps_failing_lands_whole_on_the_dead_letter_queue_and_redrives() {
    let cloud = TestCloud::new().await;
    // The photo function as deployed, but its photo bucket is gone: every write fails.
    let mut broken = cloud.in_process(cloud.app.clone());
    broken.photo_objects = std::sync::Arc::new(bouquet_photos::s3::S3Objects::with_client(
        cloud.s3.clone(),
        &cloud.photo_buckets.uploads,
        format!("{}-missing", cloud.table),
    ));
    let photos = pipeline(&cloud, broken).await;
    let vendor = cloud.vendor("Bloom").await;
    let bouquet = cloud.bouquet(&vendor, "24.50").await;
    let allowed = ticket(&cloud, &vendor, &bouquet, "image/jpeg").await.body;
    assert_eq!(
        post_form(&allowed, &jpeg_with_gps(320, 240), &[]).await.0,
        204
    );
    let upload = allowed["uploadId"].as_str().unwrap().to_owned();

    photos
        .run_until(async || photos.count(&photos.dead_letter_url).await == 1)
        .await;
    assert_eq!(
        photos.count(&photos.queue_url).await,
        0,
        "moved, not copied"
    );
    assert_eq!(
        upload_status(&cloud, &vendor, &bouquet, &upload).await["status"],
        "pending"
    );
    assert_eq!(bouquet_photo(&cloud, &bouquet).await, Value::Null);
    let parked = photos
        .sqs
        .receive_message()
        .queue_url(&photos.dead_letter_url)
        .message_system_attribute_names(
            aws_sdk_sqs::types::MessageSystemAttributeName::ApproximateReceiveCount,
        )
        .send()
        .await
        .unwrap()
        .messages
        .unwrap_or_default();
    assert_eq!(parked.len(), 1);
    let event: Value = serde_json::from_str(parked[0].body().unwrap()).unwrap();
    let key = event["Records"][0]["s3"]["object"]["key"].as_str().unwrap();
    assert_eq!(
        key.replace("%2F", "/"),
        format!("uploads/{upload}"),
        "the S3 event whole (its key URL-encoded, as S3 sends it)"
    );
    let receives: u32 = parked[0].attributes().unwrap()
        [&aws_sdk_sqs::types::MessageSystemAttributeName::ApproximateReceiveCount]
        .parse()
        .unwrap();
    assert!(
        receives >= 3,
        "after the template's maxReceiveCount (3): {receives}"
    );

    // The bucket is back: the operator redrives the message (docs/operations.md), and the
    // photo shows.
    let healthy = photos.remapped(cloud.in_process(cloud.app.clone()));
    healthy
        .sqs
        .send_message()
        .queue_url(&healthy.queue_url)
        .message_body(parked[0].body().unwrap())
        .send()
        .await
        .unwrap();
    photos
        .sqs
        .delete_message()
        .queue_url(&photos.dead_letter_url)
        .receipt_handle(parked[0].receipt_handle().unwrap())
        .send()
        .await
        .unwrap();
    healthy
        .run_until(async || {
            upload_status(&cloud, &vendor, &bouquet, &upload).await["status"] == "ready"
        })
        .await;
    assert_eq!(
        bouquet_photo(&cloud, &bouquet).await["uploadId"],
        upload.as_str()
    );
    assert_eq!(photos.count(&photos.dead_letter_url).await, 0);
    assert_eq!(photo_events(&cloud).await, 1);
}
