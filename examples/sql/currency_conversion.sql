-- Each order priced in US dollars at the exchange rate its currency had
-- when the order was placed: Flink's event-time temporal join, over a
-- table of the rates' changes as Debezium captures them from a database
-- (each change a new version of its currency's rate, from its time on).
--
--   cargo run --release -p weir-cli -- sql -f examples/sql/currency_conversion.sql
--
-- o3 sees EUR's rate after its update at 09:00:10; GBP's rate was deleted,
-- so o4 finds none (nor does o6: no USD rate); o5 sees JPY's update. An
-- order is joined once the watermarks of both tables pass its time: every
-- rate that could apply to it has come.

CREATE TABLE orders (
  order_id   STRING,
  price      DECIMAL(10, 2),
  currency   STRING,
  order_time TIMESTAMP(3),
  -- Generous: the two files are read side by side, and which rows are
  -- late must not depend on how their rows interleave.
  WATERMARK FOR order_time AS order_time - INTERVAL '1' MINUTE
) WITH (
  'connector' = 'filesystem',
  'path' = 'examples/data/currency_orders.csv',
  'format' = 'csv'
);

-- A versioned table: a primary key and an event-time attribute.
CREATE TABLE currency_rates (
  currency        STRING,
  conversion_rate DECIMAL(10, 4),
  update_time     TIMESTAMP(3),
  PRIMARY KEY (currency) NOT ENFORCED,
  WATERMARK FOR update_time AS update_time - INTERVAL '1' MINUTE
) WITH (
  'connector' = 'filesystem',
  'path' = 'examples/data/currency_rates.json',
  'format' = 'debezium-json'
);

SELECT
  o.order_id,
  o.price,
  o.currency,
  r.conversion_rate,
  o.price * r.conversion_rate AS price_in_usd,
  o.order_time
FROM orders AS o
LEFT JOIN currency_rates FOR SYSTEM_TIME AS OF o.order_time AS r
  ON o.currency = r.currency;
