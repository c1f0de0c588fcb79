bouquet_http::main!(
    handler = pay_order::handler,
    app = bouquet_app::App::taking_payments
);
