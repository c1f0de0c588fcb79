//! template.yaml is the source of wiring: every route has a function crate, an OpenAPI
//! operation (its example request is the route's fixture) and a handler the dev stack serves,
//! and every function crate is in the template; every other function has its `events/` payload.

use std::collections::BTreeSet;

use bouquet_template::Template;
use system_tests::in_process::{EVENT_FUNCTIONS, HTTP_FUNCTIONS, SCHEDULED_FUNCTIONS};
use system_tests::repository_root;

#[test]
fn template_functions_crates_fixtures_and_routes_agree() {
    let template = Template::repository().expect("template.yaml parses");
    let in_template: BTreeSet<String> = template
        .functions()
        .unwrap()
        .into_iter()
        .map(|f| f.binary)
        .collect();
    let crates: BTreeSet<String> = std::fs::read_dir(repository_root().join("functions"))
        .unwrap()
        .filter_map(|entry| entry.ok())
        .filter(|entry| entry.path().join("Cargo.toml").is_file())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        in_template, crates,
        "functions in template.yaml (left) and crates under functions/ (right) differ"
    );

    for binary in &crates {
        let manifest = std::fs::read_to_string(
            repository_root()
                .join("functions")
                .join(binary)
                .join("Cargo.toml"),
        )
        .unwrap();
        assert!(
            manifest.contains(&format!("name = \"{binary}\"")),
            "functions/{binary} must build a binary named {binary} (BuildProperties.Binary)"
        );
    }
    let http: BTreeSet<&str> = HTTP_FUNCTIONS
        .iter()
        .map(|(binary, _, _)| *binary)
        .collect();
    for binary in crates.iter().filter(|b| !http.contains(b.as_str())) {
        assert!(
            repository_root()
                .join("events")
                .join(format!("{binary}.json"))
                .is_file(),
            "write events/{binary}.json: {binary}'s trigger payload (an HTTP function's is its OpenAPI operation's example)"
        );
    }

    let template_routes: BTreeSet<(String, String, String)> = template
        .http_routes()
        .unwrap()
        .into_iter()
        .map(|r| (r.binary, r.method, r.path))
        .collect();
    let code_routes: BTreeSet<(String, String, String)> = HTTP_FUNCTIONS
        .iter()
        .map(|(binary, route, _)| {
            (
                binary.to_string(),
                route.method.to_owned(),
                route.path.to_owned(),
            )
        })
        .collect();
    assert_eq!(
        template_routes, code_routes,
        "routes in template.yaml (left) and the crates' ROUTE constants (right) differ"
    );
}

/// Each route's fixture is made from its operation: it names its route, carries claims iff
/// the route is protected, and parses as `lambda_http` parses API Gateway's event.
#[test]
fn every_route_fixture_names_its_route() {
    let template = Template::repository().unwrap();
    for route in template.http_routes().unwrap() {
        let request = system_tests::fixture(&route.binary);
        let event = request.event();
        assert_eq!(
            event["routeKey"],
            format!("{} {}", route.method, route.path),
            "infra/openapi.yaml: the operation with x-function: {}",
            route.binary
        );
        assert_eq!(
            event["requestContext"]["authorizer"].is_object(),
            route.authorized,
            "infra/openapi.yaml: {}'s security (claims iff the route is protected)",
            route.binary
        );
        let built = request.build();
        assert!(
            !built.uri().path().contains('{'),
            "{}: every path parameter has an example",
            route.binary
        );
    }
}

/// The functions of the template's `triggers` (a function and what triggers it) are those the
/// harness runs, `in_code`.
#[track_caller]
fn assert_same_functions<T>(triggers: Vec<(bouquet_template::Function, T)>, in_code: &[&str]) {
    let in_template: BTreeSet<String> = triggers.into_iter().map(|(f, _)| f.binary).collect();
    let in_code: BTreeSet<String> = in_code.iter().map(|b| b.to_string()).collect();
    assert_eq!(in_template, in_code);
}

#[test]
fn scheduled_functions_match_the_template() {
    let template = Template::repository().unwrap();
    assert_same_functions(template.schedules().unwrap(), SCHEDULED_FUNCTIONS);
    assert!(template
        .schedules()
        .unwrap()
        .iter()
        .any(|(f, rate)| f.binary == "expire-reservations" && rate == "rate(1 minute)"));
}

#[test]
fn event_bus_consumers_match_the_template() {
    let template = Template::repository().unwrap();
    assert_same_functions(
        template.events_of_type("EventBridgeRule").unwrap(),
        EVENT_FUNCTIONS,
    );
}

#[test]
fn every_function_has_a_log_group_with_retention_and_error_and_throttle_alarms() {
    let template = Template::repository().expect("template.yaml parses");
    for function in template.functions().unwrap() {
        let id = &function.logical_id;
        let logs = template.resource(&format!("{id}Logs")).unwrap_or_else(|| {
            panic!("{id} has no {id}Logs log group: name it in Fn::ForEach::FunctionLogsAndAlarms")
        });
        assert_eq!(logs["Type"], "AWS::Logs::LogGroup");
        assert!(
            !logs["Properties"]["RetentionInDays"].is_null(),
            "{id}Logs keeps logs forever"
        );
        assert_eq!(
            logs["Properties"]["LogGroupName"]["Fn::Sub"],
            format!("/aws/lambda/${{{id}}}"),
            "{id}Logs is another function's"
        );
        for metric in ["Errors", "Throttles"] {
            let alarm = template
                .resource(&format!("{id}{metric}"))
                .unwrap_or_else(|| panic!("{id} has no {metric} alarm"));
            assert_eq!(alarm["Properties"]["MetricName"], metric);
            assert_eq!(
                alarm["Properties"]["Dimensions"][0]["Value"]["Fn::Sub"],
                format!("${{{id}}}"),
                "{id}{metric} watches another function"
            );
        }
    }
    // Every queue that collects failures has an alarm on its depth.
    for queue in [
        "OutboxFailureQueue",
        "VaseMessagesDeadLetterQueue",
        "AnalyticsDeadLetterQueue",
    ] {
        let watched = template
            .resources_of_type("AWS::CloudWatch::Alarm")
            .any(|(_, alarm)| {
                alarm["Properties"]["Dimensions"][0]["Value"]["Fn::GetAtt"][0] == queue
            });
        assert!(watched, "no alarm on {queue}");
    }
}

#[test]
fn the_websocket_api_routes_match_the_functions() {
    let api = Template::repository()
        .unwrap()
        .websocket_api()
        .unwrap()
        .expect("a WebSocket API");
    assert_eq!(api.route_selection, "$request.body.action");
    let keys: Vec<&str> = api.routes.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "$connect",
            "$default",
            "$disconnect",
            "ping",
            "subscribe",
            "unsubscribe"
        ]
    );
    // Every message route answers on the connection; $connect and $disconnect cannot.
    for route in &api.routes {
        assert_eq!(
            route.two_way,
            !route.key.ends_with("connect"),
            "{}",
            route.key
        );
    }
    let mut binaries: BTreeSet<String> = api.routes.iter().map(|r| r.binary.clone()).collect();
    binaries.extend(api.authorizer.clone());
    let in_code: BTreeSet<String> = system_tests::in_process::WEBSOCKET_FUNCTIONS
        .iter()
        .map(|b| b.to_string())
        .collect();
    assert_eq!(binaries, in_code);
    assert_eq!(api.authorizer.as_deref(), Some("ws-authorize"));
}

/// `infra/openapi.yaml` documents exactly the template's HTTP routes: each operation names
/// its function, says whether it is public as the template does, and lists who may call it.
#[test]
fn the_openapi_document_has_exactly_the_templates_routes() {
    let template = Template::repository().expect("template.yaml parses");
    let text = std::fs::read_to_string(repository_root().join("infra/openapi.yaml")).unwrap();
    // A YAML value first: it refuses a key given twice (JSON's map would keep the last).
    serde_norway::from_str::<serde_norway::Value>(&text)
        .expect("openapi.yaml parses, no key given twice");
    let document: serde_json::Value = serde_norway::from_str(&text).expect("openapi.yaml parses");
    assert!(document["openapi"]
        .as_str()
        .is_some_and(|v| v.starts_with("3.1")));
    let mut documented = BTreeSet::new();
    for (path, item) in document["paths"].as_object().expect("paths") {
        for (method, operation) in item.as_object().unwrap() {
            if !["get", "put", "post", "delete", "patch"].contains(&method.as_str()) {
                continue;
            }
            let public = operation["security"].as_array().is_some_and(Vec::is_empty);
            let roles: BTreeSet<String> = operation["security"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|requirement| {
                    requirement["cognito"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default()
                })
                .filter_map(|role| role.as_str().map(str::to_owned))
                .collect();
            assert!(
                public || !roles.is_empty(),
                "{method} {path}: name the roles that may call it"
            );
            assert!(
                roles
                    .iter()
                    .all(|r| ["customer", "vendor", "admin"].contains(&r.as_str())),
                "{method} {path}: unknown role in {roles:?}"
            );
            documented.insert((
                method.to_uppercase(),
                path.clone(),
                operation["x-function"].as_str().unwrap_or("?").to_owned(),
                !public,
            ));
        }
    }
    let routed: BTreeSet<(String, String, String, bool)> = template
        .http_routes()
        .unwrap()
        .into_iter()
        .map(|r| (r.method, r.path, r.binary, r.authorized))
        .collect();
    let missing: Vec<_> = routed.difference(&documented).collect();
    let extra: Vec<_> = documented.difference(&routed).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "(method, path, function, authorized) in template.yaml but not in openapi.yaml: {missing:#?}\nin openapi.yaml but not in template.yaml: {extra:#?}"
    );
}

/// Every route gets through the template's CloudFront behaviors as its contract says: the
/// behavior its path falls under takes its method, and every request header it documents
/// (and `Authorization` where it needs a token) reaches the API, cached behaviors included.
/// `If-None-Match` may stop at the edge, which answers it from its copy.
#[test]
fn every_route_passes_the_edge_with_its_method_and_the_headers_it_reads() {
    let template = Template::repository().expect("template.yaml parses");
    let edge = devstack::edge_cache::EdgeCache::from_template(&template);
    let text = std::fs::read_to_string(repository_root().join("infra/openapi.yaml")).unwrap();
    let document: serde_json::Value = serde_norway::from_str(&text).expect("openapi.yaml parses");
    let resolve = |parameter: &serde_json::Value| match parameter["$ref"].as_str() {
        Some(reference) => document
            .pointer(reference.trim_start_matches('#'))
            .cloned()
            .unwrap_or_else(|| panic!("{reference}")),
        None => parameter.clone(),
    };
    let mut checked = 0;
    for (path, item) in document["paths"].as_object().expect("paths") {
        // A path as a request has it: each `{parameter}` a value.
        let concrete = path
            .split('/')
            .map(|s| {
                if s.starts_with('{') {
                    "01JF3W8K2M4N6P8Q0R2S4T6V8W"
                } else {
                    s
                }
            })
            .collect::<Vec<_>>()
            .join("/");
        for (method, operation) in item.as_object().unwrap() {
            if !["get", "put", "post", "delete", "patch"].contains(&method.as_str()) {
                continue;
            }
            let method = method.to_uppercase();
            assert!(edge.allows(&method, &concrete), "{method} {path}");
            let mut headers: Vec<String> = operation["parameters"]
                .as_array()
                .into_iter()
                .flatten()
                .map(resolve)
                .filter(|p| p["in"] == "header")
                .map(|p| p["name"].as_str().unwrap().to_owned())
                .filter(|name| !name.eq_ignore_ascii_case("if-none-match"))
                .collect();
            if operation["security"]
                .as_array()
                .is_none_or(|s| !s.is_empty())
            {
                headers.push("Authorization".into());
            }
            if operation.get("requestBody").is_some() {
                headers.push("Content-Type".into());
            }
            for header in headers {
                assert!(
                    edge.reaches_origin(&concrete, &header),
                    "{method} {path}: {header} does not reach the API"
                );
            }
            checked += 1;
        }
    }
    assert_eq!(
        checked,
        template.http_routes().unwrap().len(),
        "every route checked"
    );
}

/// Anyone signs up and is a customer; roles are groups; the shop attribute is not the app
/// client's to write.
#[test]
fn the_user_pool_lets_customers_sign_up_and_keeps_roles_for_administrators() {
    let template = Template::repository().expect("template.yaml parses");
    let pool = &template.resource("UserPool").expect("UserPool")["Properties"];
    assert_eq!(
        pool["AdminCreateUserConfig"]["AllowAdminCreateUserOnly"],
        false
    );
    assert_eq!(pool["AutoVerifiedAttributes"], serde_json::json!(["email"]));
    let client = &template.resource("UserPoolClient").expect("UserPoolClient")["Properties"];
    let writable: Vec<&str> = client["WriteAttributes"]
        .as_array()
        .expect("WriteAttributes is explicit (the default is every attribute)")
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    assert!(
        writable.iter().all(|a| !a.starts_with("custom:")),
        "{writable:?}"
    );
    let groups: BTreeSet<&str> = template
        .resources()
        .filter(|(_, r)| r["Type"] == "AWS::Cognito::UserPoolGroup")
        .filter_map(|(_, r)| r["Properties"]["GroupName"].as_str())
        .collect();
    assert_eq!(
        groups,
        BTreeSet::from([
            bouquet_app::domain::identity::VENDOR_GROUP,
            bouquet_app::domain::identity::ADMIN_GROUP
        ])
    );
}

/// `sam build` runs the Makefile's `build-<LogicalId>` for each function, and the Makefile finds
/// the crate from the logical id: `CreateOrderFunction` is `functions/create-order`. So every
/// function builds with the makefile method and is named after its crate.
#[test]
fn every_function_builds_through_the_makefile_under_its_crates_name() {
    let template = Template::repository().expect("template.yaml parses");
    for function in template.functions().unwrap() {
        let resource = template.resource(&function.logical_id).unwrap();
        assert_eq!(
            resource["Metadata"]["BuildMethod"], "makefile",
            "{}",
            function.logical_id
        );
        let camel: String = function
            .binary
            .split('-')
            .map(|word| {
                let mut chars = word.chars();
                chars
                    .next()
                    .map(|first| first.to_ascii_uppercase().to_string() + chars.as_str())
                    .unwrap_or_default()
            })
            .collect();
        assert_eq!(
            function.logical_id,
            format!("{camel}Function"),
            "the Makefile derives the crate from the logical id"
        );
    }
    let makefile = std::fs::read_to_string(repository_root().join("Makefile")).unwrap();
    assert!(makefile.contains("build-%Function:"), "{makefile}");
}

/// The live half's resources: connections in their own table off the outbox stream; the
/// fan-out queue's failures land on a dead-letter queue that alarms, and the worker is the one
/// consumer; the catalogue's cache behavior comes before the uncached `/v1/*`.
#[test]
fn the_live_fan_out_and_the_catalogue_cache_are_wired_as_designed() {
    let template = Template::repository().expect("template.yaml parses");
    let resource = |id: &str| {
        template
            .resource(id)
            .unwrap_or_else(|| panic!("{id}"))
            .clone()
    };
    let live = resource("LiveTable");
    assert!(
        live["Properties"]["StreamSpecification"].is_null(),
        "no stream on LiveTable"
    );
    assert_eq!(
        live["Properties"]["TimeToLiveSpecification"]["AttributeName"],
        "expiresAt"
    );
    assert!(!resource("MarketTable")["Properties"]["StreamSpecification"].is_null());
    let worker = template
        .functions()
        .unwrap()
        .into_iter()
        .find(|f| f.binary == "push-frames")
        .unwrap();
    let env: std::collections::HashMap<String, String> = template
        .environment(&worker, &|v: &serde_json::Value| v.to_string())
        .into_iter()
        .collect();
    assert_eq!(env["LIVE_TABLE_NAME"], r#"{"Ref":"LiveTable"}"#);

    let queue = resource("FanoutQueue");
    assert_eq!(
        queue["Properties"]["RedrivePolicy"]["deadLetterTargetArn"],
        serde_json::json!({ "Fn::GetAtt": ["FanoutDeadLetterQueue", "Arn"] })
    );
    let alarm = resource("FanoutDeadLetterAlarm");
    assert_eq!(
        alarm["Properties"]["Dimensions"][0]["Value"],
        serde_json::json!({ "Fn::GetAtt": ["FanoutDeadLetterQueue", "QueueName"] })
    );
    let consumers: Vec<String> = template
        .events_of_type("SQS")
        .unwrap()
        .into_iter()
        .filter(|(_, e)| {
            e["Properties"]["Queue"] == serde_json::json!({ "Fn::GetAtt": ["FanoutQueue", "Arn"] })
        })
        .map(|(f, e)| {
            assert_eq!(
                e["Properties"]["FunctionResponseTypes"][0],
                "ReportBatchItemFailures"
            );
            f.binary
        })
        .collect();
    assert_eq!(consumers, vec!["push-frames".to_owned()]);

    let behaviors = resource("WebDistribution")["Properties"]["DistributionConfig"]
        ["CacheBehaviors"]
        .as_array()
        .unwrap()
        .clone();
    let position = |pattern: &str| {
        behaviors
            .iter()
            .position(|b| b["PathPattern"] == pattern)
            .unwrap_or_else(|| panic!("{pattern}"))
    };
    assert!(position("/v1/bouquets") < position("/v1/*"));
    assert!(position("/v1/bouquets/*/*") < position("/v1/bouquets/*"));
    assert!(position("/v1/bouquets/*") < position("/v1/*"));
    assert_eq!(
        behaviors[position("/v1/bouquets")]["CachePolicyId"],
        serde_json::json!({ "Ref": "CatalogueCachePolicy" })
    );
}

#[test]
fn the_broadcasters_rule_takes_every_event_that_has_a_live_channel() {
    use bouquet_app::domain::channels::{route, EventIds};
    use bouquet_app::domain::events::EventData;
    let template = Template::repository().unwrap();
    let function = template.resource("BroadcastEventsFunction").unwrap();
    let taken: std::collections::BTreeSet<String> = function["Properties"]["Events"]["LiveEvents"]
        ["Properties"]["Pattern"]["detail-type"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    let ids: EventIds = serde_json::from_value(serde_json::json!({
        "bouquetId": "01JF3W8K2M4N6P8Q0R2S4T6V8W",
        "vendorId": "01JF3W6Q5V7Y8Z9A0B1C2D3E4F",
        "customerId": "c-1",
        "bouquetIds": ["01JF3W8K2M4N6P8Q0R2S4T6V8W"],
    }))
    .unwrap();
    let routed: std::collections::BTreeSet<String> = EventData::NAMES
        .iter()
        .filter(|name| !route(name, &ids).is_empty())
        .map(|name| (*name).to_owned())
        .collect();
    assert_eq!(
        taken, routed,
        "the rule's detail-types are the events with a live channel"
    );
}

/// DynamoDB refuses an attribute definition that no key uses, and a table update that adds
/// more than one GSI: for each value of `CataloguePriceIndex` and `CatalogueRatingIndex`,
/// `MarketTable`'s definitions are exactly its keys' attributes, and each `deferred` leaves
/// out one index (an upgrade's deploys add one each, docs/deploying.md).
#[test]
fn the_market_table_defines_exactly_its_keys_with_the_price_index_or_without() {
    use std::collections::HashMap;
    let template = Template::repository().unwrap();
    let table = &template.resource("MarketTable").unwrap()["Properties"];
    let chosen = |list: &serde_json::Value, value: (&str, &str)| -> Vec<serde_json::Value> {
        let parameters = HashMap::from([
            ("CataloguePriceIndex", value.0),
            ("CatalogueRatingIndex", value.1),
        ]);
        list.as_array()
            .unwrap()
            .iter()
            .filter_map(|item| match item.get("Fn::If") {
                Some(arguments) => template
                    .if_branch_with(arguments, &parameters)
                    .unwrap()
                    .cloned(),
                None => Some(item.clone()),
            })
            .collect()
    };
    let names = |keys: &serde_json::Value| -> Vec<String> {
        keys.as_array()
            .unwrap()
            .iter()
            .map(|k| k["AttributeName"].as_str().unwrap().to_owned())
            .collect()
    };
    let mut index_counts = Vec::new();
    for value in [
        ("enabled", "enabled"),
        ("deferred", "enabled"),
        ("enabled", "deferred"),
        ("deferred", "deferred"),
    ] {
        let defined: BTreeSet<String> = chosen(&table["AttributeDefinitions"], value)
            .iter()
            .map(|d| d["AttributeName"].as_str().unwrap().to_owned())
            .collect();
        let indexes = chosen(&table["GlobalSecondaryIndexes"], value);
        let mut keyed: BTreeSet<String> = names(&table["KeySchema"]).into_iter().collect();
        for index in &indexes {
            keyed.extend(names(&index["KeySchema"]));
        }
        assert_eq!(
            defined, keyed,
            "(CataloguePriceIndex, CatalogueRatingIndex)={value:?}"
        );
        index_counts.push((value, indexes.len()));
    }
    assert_eq!(index_counts[0].1, index_counts[1].1 + 1, "{index_counts:?}");
    assert_eq!(index_counts[0].1, index_counts[2].1 + 1, "{index_counts:?}");
    assert_eq!(index_counts[0].1, index_counts[3].1 + 2, "{index_counts:?}");
}
