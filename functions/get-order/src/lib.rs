//! `GET /v1/orders/{orderId}`: one order, for its customer, its vendor or an admin. Anyone
//! else gets 404, not 403: an order id must not reveal that the order exists. With it: its
//! review, once written, and its proof-of-delivery photo through a URL signed for 15 minutes
//! (its sizes are private; the order keeps only their keys).

use bouquet_app::domain::OrderId;
use bouquet_app::{proof_of_delivery, queries, reviews};
use bouquet_http::{ApiError, Ctx, Reply};

bouquet_http::route!(GET "/v1/orders/{orderId}" => handle);

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let caller = ctx.caller()?;
    let order_id = ctx.path("orderId", OrderId::parse)?;
    let order = queries::order(&ctx.app, caller, order_id).await?;
    let photo = async {
        if order.delivery_photo.is_none() {
            return Ok(None);
        }
        let signer = ctx.app.ports.photo_signer().await?;
        proof_of_delivery::signed_photo(signer, &order, ctx.now)
            .await
            .map_err(ApiError::internal)
    };
    let (review, photo) = tokio::try_join!(
        async {
            reviews::of_order(&ctx.app, order_id)
                .await
                .map_err(ApiError::from)
        },
        photo
    )?;
    let mut body = serde_json::to_value(order.as_seen_at(ctx.now)).map_err(ApiError::internal)?;
    if let Some(review) = review {
        body["review"] = serde_json::to_value(review).map_err(ApiError::internal)?;
    }
    if let Some(photo) = photo {
        body["deliveryPhoto"] = serde_json::to_value(photo).map_err(ApiError::internal)?;
    }
    Reply::ok(&body)
}
