//! `DELETE /v1/bouquets/{bouquetId}`: its vendor withdraws a bouquet while it is available
//! (409 `bouquet.not_available_for_change` otherwise). `If-Match` is honoured when sent.

use bouquet_app::domain::events::{DomainEvent, EventData};
use bouquet_app::domain::BouquetId;
use bouquet_app::store::retry::Retry;
use bouquet_app::store::StoreError;
use bouquet_app::App;
use bouquet_http::lambda_http::{Body, Error, Request, Response};
use bouquet_http::owned::{refused_change, vendor_bouquet};
use bouquet_http::{run, ApiError, Ctx, Reply, Route};

pub const ROUTE: Route = Route::new("DELETE", "/v1/bouquets/{bouquetId}");

pub async fn handler(app: &App, request: Request) -> Result<Response<Body>, Error> {
    run(app, request, ROUTE, handle).await
}

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let bouquet_id = ctx.path("bouquetId", BouquetId::parse)?;
    ctx.caller()?;
    let if_match = ctx.if_match()?;
    let mut retry = Retry::optimistic();
    while retry.next().await {
        let read = vendor_bouquet(ctx, bouquet_id, if_match).await?;
        let mut withdrawn = read.clone();
        withdrawn.withdraw(ctx.now)?;
        let event = DomainEvent::new(
            bouquet_id,
            withdrawn.version,
            ctx.now,
            &ctx.correlation_id,
            EventData::BouquetWithdrawn {
                bouquet_id,
                vendor_id: withdrawn.vendor_id,
            },
        );
        match ctx
            .app
            .store
            .save_bouquet(&withdrawn, read.version, &event, ctx.now)
            .await
        {
            Ok(()) => return Reply::ok(&withdrawn.view(ctx.now)),
            Err(StoreError::ConditionFailed(conflicts)) => {
                refused_change(conflicts, ctx, if_match)?
            }
            Err(other) => return Err(other.into()),
        }
    }
    Err(ApiError::Busy)
}
