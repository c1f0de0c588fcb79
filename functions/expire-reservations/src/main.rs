bouquet_app::main!(
    handler = expire_reservations::handler,
    app = bouquet_app::App::taking_payments
);
