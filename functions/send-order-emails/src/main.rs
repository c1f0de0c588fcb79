bouquet_runtime::main!(function = send_order_emails::SendOrderEmails);
