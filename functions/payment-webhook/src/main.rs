bouquet_http::main!(
    handler = payment_webhook::handler,
    app = bouquet_app::App::taking_payments,
    with = payment_webhook::SigningSecret::from_env
);
