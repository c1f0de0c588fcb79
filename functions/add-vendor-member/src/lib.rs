//! `POST /v1/vendors/{vendorId}/members` `{email}`: an admin makes the user with that email a
//! member of the shop (its `custom:vendorId` and the `vendor` group), inviting them when they
//! have no account: 201 invited, 200 updated (also when already a member).

use bouquet_app::domain::identity::Email;
use bouquet_app::domain::{FieldError, VendorId};
use bouquet_app::members::{add_vendor_member, MembershipChange};
use bouquet_http::lambda_http::http::StatusCode;
use bouquet_http::{ApiError, Ctx, Reply, Role};
use serde::Deserialize;
use serde_json::json;

bouquet_http::route!(POST "/v1/vendors/{vendorId}/members" => handle, for_the_shop_in_the_path);

#[derive(Deserialize)]
struct NewMember {
    email: String,
}

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    ctx.caller()?.require(Role::Admin)?;
    let vendor_id = ctx.path("vendorId", VendorId::parse)?;
    let body: NewMember = ctx.json()?;
    let email = Email::parse(&body.email)
        .map_err(|e| ApiError::Invalid(vec![FieldError::new("email", e)]))?;
    let directory = ctx.app.ports.directory().await?;
    let directory = directory.ok_or(ApiError::NotImplemented(
        "this stack trusts an external identity provider; manage vendor members there",
    ))?;
    let membership = add_vendor_member(&ctx.app, directory, vendor_id, &email, ctx.now).await?;
    let (status, outcome) = match membership.change {
        MembershipChange::Invited => (StatusCode::CREATED, "invited"),
        MembershipChange::Updated => (StatusCode::OK, "updated"),
    };
    Reply::json(
        status,
        &json!({
            "email": email.as_str(),
            "userId": membership.user.user_id,
            "vendorId": membership.vendor_id,
            "role": "vendor",
            "status": outcome,
        }),
    )
}
