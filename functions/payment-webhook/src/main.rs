bouquet_http::main!(
    handler = payment_webhook::handler,
    app = bouquet_app::App::taking_payments
);
