// Runs a Nexmark SQL script (`weir-bench sql --script qN`) on Flink 2.3 over
// the very events Weir's `nexmark` tables read: the pool that
// `weir-bench sql --write-pool DIR` writes, replayed as Weir replays it
// (event n is pool event n mod size, its ids and times moved on by a pass's
// worth for each earlier pass).
//
// A `CREATE TABLE t (...) WITH ('connector' = 'nexmark', 'table' = KIND,
// 'events.num' = N ...)` becomes a view of that name over a generator
// source of the kind's events among the first N (Flink's Nexmark connector
// is not among the PyPI jars), with the scripts' watermark `dateTime -
// INTERVAL '4' SECOND` where the table declares one; `CREATE FUNCTION
// count_char` registers the suite's user function, written here. Other statements run as SqlPeer runs them, with
// the column `dateTime` quoted (a reserved word in Flink 2). An
// INSERT runs to its end, then one line goes to stdout:
//
//   RESULT events=N seconds=S job_seconds=J cpu_seconds=C peak_rss_kib=R
//
// seconds from submission to end (planning of the INSERT included, JVM
// start excluded), job_seconds the job's own run time as Flink reports it,
// cpu_seconds of the whole JVM from submission to end, and the process's
// peak RSS. A SELECT prints its rows as SqlPeer does.
//
// Usage: NexmarkPeer POOL_DIR SCRIPT.sql
package weirpeer;

import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.connector.datagen.source.GeneratorFunction;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.api.Schema;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.functions.ScalarFunction;
import org.apache.flink.types.Row;
import org.apache.flink.util.CloseableIterator;

public final class NexmarkPeer {
    private static final Pattern SET = Pattern.compile("(?is)^SET\\s+'([^']*)'\\s*=\\s*'([^']*)'$");
    private static final Pattern NEXMARK_TABLE = Pattern.compile(
            "(?is)^CREATE\\s+TABLE\\s+(\\w+)\\s*\\(.*'connector'\\s*=\\s*'nexmark'.*");
    private static final Pattern OPTION = Pattern.compile("'([\\w.]+)'\\s*=\\s*'([^']*)'");
    private static final Pattern DATE_TIME = Pattern.compile("(?<![`\\w])dateTime(?![`\\w])");
    private static final Pattern COUNT_CHAR = Pattern.compile("(?is)^CREATE\\s+FUNCTION\\s+count_char\\s+AS\\s+.*");
    private static final String WATERMARK = "dateTime - INTERVAL '4' SECOND";

    /** The events per 50 of each kind, and the first place among the 50. */
    private static final int TOTAL = 50;

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: NexmarkPeer POOL_DIR SCRIPT.sql");
            System.exit(2);
        }
        Path pool = Path.of(args[0]);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        StreamTableEnvironment tables = StreamTableEnvironment.create(env);
        tables.getConfig().set("table.local-time-zone", "UTC");
        long events = 0;
        for (String statement : SqlPeer.statements(Files.readString(Path.of(args[1])))) {
            Matcher set = SET.matcher(statement);
            if (set.matches()) {
                tables.getConfig().set(set.group(1), set.group(2));
                continue;
            }
            Matcher nexmark = NEXMARK_TABLE.matcher(statement);
            if (nexmark.matches()) {
                boolean watermark = statement.contains(WATERMARK);
                if (!watermark && statement.toUpperCase().contains("WATERMARK")) {
                    throw new IllegalArgumentException(
                            "a nexmark table here has no watermark or " + WATERMARK + ": " + statement);
                }
                String kind = null;
                Matcher option = OPTION.matcher(statement);
                while (option.find()) {
                    if (option.group(1).equals("table")) {
                        kind = option.group(2);
                    } else if (option.group(1).equals("events.num")) {
                        events = Long.parseLong(option.group(2));
                    }
                }
                if (kind == null || events == 0) {
                    throw new IllegalArgumentException("'table' and 'events.num' are needed: " + statement);
                }
                register(env, tables, nexmark.group(1), Kind.valueOf(kind.toUpperCase()), pool, events,
                        watermark);
                continue;
            }
            if (COUNT_CHAR.matcher(statement).matches()) {
                // The suite's user function, written here.
                tables.createTemporarySystemFunction("count_char", CountChar.class);
                continue;
            }
            // DATETIME is a reserved word in Flink 2's parser; the Nexmark
            // scripts name a column so, unquoted, as the suite has always.
            statement = DATE_TIME.matcher(statement).replaceAll("`dateTime`");
            String head = statement.trim().toUpperCase();
            long started = System.nanoTime();
            long cpu = cpuNanos();
            TableResult result = tables.executeSql(statement);
            if (head.startsWith("INSERT")) {
                result.await();
                double seconds = (System.nanoTime() - started) / 1e9;
                double cpuSeconds = (cpuNanos() - cpu) / 1e9;
                long net = result.getJobClient().orElseThrow().getJobExecutionResult().get().getNetRuntime();
                System.out.printf("RESULT events=%d seconds=%.3f job_seconds=%.3f cpu_seconds=%.3f peak_rss_kib=%d%n",
                        events, seconds, net / 1e3, cpuSeconds, peakRssKib());
            }
            if (head.startsWith("SELECT") || head.startsWith("WITH")) {
                try (CloseableIterator<Row> rows = result.collect()) {
                    while (rows.hasNext()) {
                        System.out.println(SqlPeer.format(rows.next()));
                    }
                }
            }
        }
        System.out.flush();
        System.exit(0);
    }

    enum Kind {
        PERSON(0, 1), AUCTION(1, 3), BID(4, 46);

        final int first;
        final int each;

        Kind(int first, int each) {
            this.first = first;
            this.each = each;
        }

        /** How many of events 0..n are of this kind. */
        long count(long n) {
            return n / TOTAL * each + Math.min(Math.max(n % TOTAL - first, 0), each);
        }
    }

    static void register(StreamExecutionEnvironment env, StreamTableEnvironment tables, String name, Kind kind,
            Path pool, long events, boolean watermark) throws Exception {
        String[] step = Files.readString(pool.resolve("pool.txt")).trim().split(" ");
        long people = Long.parseLong(step[0]);
        long auctions = Long.parseLong(step[1]);
        long ms = Long.parseLong(step[2]);
        List<String> lines = Files.readAllLines(pool.resolve(kind.name().toLowerCase() + ".tsv"));
        String[][] fields = new String[lines.size()][];
        for (int i = 0; i < fields.length; i++) {
            fields[i] = lines.get(i).split("\t", -1);
        }
        Schema.Builder schema = Schema.newBuilder();
        TypeInformation<Row> type;
        GeneratorFunction<Long, Row> generator;
        switch (kind) {
            case PERSON: {
                Person[] pool0 = new Person[fields.length];
                for (int i = 0; i < fields.length; i++) {
                    pool0[i] = new Person(fields[i]);
                }
                generator = n -> {
                    long pass = n / pool0.length;
                    Person p = pool0[(int) (n % pool0.length)];
                    return Row.of(p.id + pass * people, p.name, p.emailAddress, p.creditCard, p.city, p.state,
                            time(p.dateTime + pass * ms), p.extra);
                };
                type = Types.ROW_NAMED(
                        new String[] {"id", "name", "emailAddress", "creditCard", "city", "state", "dateTime",
                            "extra"},
                        Types.LONG, Types.STRING, Types.STRING, Types.STRING, Types.STRING, Types.STRING,
                        Types.LOCAL_DATE_TIME, Types.STRING);
                schema.column("id", DataTypes.BIGINT()).column("name", DataTypes.STRING())
                        .column("emailAddress", DataTypes.STRING()).column("creditCard", DataTypes.STRING())
                        .column("city", DataTypes.STRING()).column("state", DataTypes.STRING())
                        .column("dateTime", DataTypes.TIMESTAMP(3)).column("extra", DataTypes.STRING());
                break;
            }
            case AUCTION: {
                Auction[] pool0 = new Auction[fields.length];
                for (int i = 0; i < fields.length; i++) {
                    pool0[i] = new Auction(fields[i]);
                }
                generator = n -> {
                    long pass = n / pool0.length;
                    Auction a = pool0[(int) (n % pool0.length)];
                    return Row.of(a.id + pass * auctions, a.itemName, a.description, a.initialBid, a.reserve,
                            time(a.dateTime + pass * ms), time(a.expires + pass * ms), a.seller + pass * people,
                            a.category, a.extra);
                };
                type = Types.ROW_NAMED(
                        new String[] {"id", "itemName", "description", "initialBid", "reserve", "dateTime",
                            "expires", "seller", "category", "extra"},
                        Types.LONG, Types.STRING, Types.STRING, Types.LONG, Types.LONG, Types.LOCAL_DATE_TIME,
                        Types.LOCAL_DATE_TIME, Types.LONG, Types.LONG, Types.STRING);
                schema.column("id", DataTypes.BIGINT()).column("itemName", DataTypes.STRING())
                        .column("description", DataTypes.STRING()).column("initialBid", DataTypes.BIGINT())
                        .column("reserve", DataTypes.BIGINT()).column("dateTime", DataTypes.TIMESTAMP(3))
                        .column("expires", DataTypes.TIMESTAMP(3)).column("seller", DataTypes.BIGINT())
                        .column("category", DataTypes.BIGINT()).column("extra", DataTypes.STRING());
                break;
            }
            default: {
                Bid[] pool0 = new Bid[fields.length];
                for (int i = 0; i < fields.length; i++) {
                    pool0[i] = new Bid(fields[i]);
                }
                generator = n -> {
                    long pass = n / pool0.length;
                    Bid b = pool0[(int) (n % pool0.length)];
                    return Row.of(b.auction + pass * auctions, b.bidder + pass * people, b.price, b.channel, b.url,
                            time(b.dateTime + pass * ms), b.extra);
                };
                type = Types.ROW_NAMED(
                        new String[] {"auction", "bidder", "price", "channel", "url", "dateTime", "extra"},
                        Types.LONG, Types.LONG, Types.LONG, Types.STRING, Types.STRING, Types.LOCAL_DATE_TIME,
                        Types.STRING);
                schema.column("auction", DataTypes.BIGINT()).column("bidder", DataTypes.BIGINT())
                        .column("price", DataTypes.BIGINT()).column("channel", DataTypes.STRING())
                        .column("url", DataTypes.STRING()).column("dateTime", DataTypes.TIMESTAMP(3))
                        .column("extra", DataTypes.STRING());
            }
        }
        if (watermark) {
            schema.watermark("dateTime", "`dateTime` - INTERVAL '4' SECOND");
        }
        DataGeneratorSource<Row> source = new DataGeneratorSource<>(generator, kind.count(events), type);
        DataStream<Row> stream = env.fromSource(source, WatermarkStrategy.noWatermarks(), name);
        tables.createTemporaryView(name, tables.fromDataStream(stream, schema.build()));
    }

    static LocalDateTime time(long ms) {
        return LocalDateTime.ofEpochSecond(Math.floorDiv(ms, 1000), (int) Math.floorMod(ms, 1000) * 1_000_000,
                ZoneOffset.UTC);
    }

    static long cpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
    }

    static long peakRssKib() throws Exception {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmHWM:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", ""));
            }
        }
        return 0;
    }

    /** Nexmark's `count_char(text, 'c')`: how many times the character is in the text. */
    public static final class CountChar extends ScalarFunction {
        public long eval(String text, String character) {
            if (text == null || character == null || character.isEmpty()) {
                return 0;
            }
            char c = character.charAt(0);
            long n = 0;
            for (int i = 0; i < text.length(); i++) {
                if (text.charAt(i) == c) {
                    n++;
                }
            }
            return n;
        }
    }

    static final class Person implements java.io.Serializable {
        final long id;
        final String name, emailAddress, creditCard, city, state, extra;
        final long dateTime;

        Person(String[] f) {
            id = Long.parseLong(f[0]);
            name = f[1];
            emailAddress = f[2];
            creditCard = f[3];
            city = f[4];
            state = f[5];
            dateTime = Long.parseLong(f[6]);
            extra = f[7];
        }
    }

    static final class Auction implements java.io.Serializable {
        final long id, initialBid, reserve, dateTime, expires, seller, category;
        final String itemName, description, extra;

        Auction(String[] f) {
            id = Long.parseLong(f[0]);
            itemName = f[1];
            description = f[2];
            initialBid = Long.parseLong(f[3]);
            reserve = Long.parseLong(f[4]);
            dateTime = Long.parseLong(f[5]);
            expires = Long.parseLong(f[6]);
            seller = Long.parseLong(f[7]);
            category = Long.parseLong(f[8]);
            extra = f[9];
        }
    }

    static final class Bid implements java.io.Serializable {
        final long auction, bidder, price, dateTime;
        final String channel, url, extra;

        Bid(String[] f) {
            auction = Long.parseLong(f[0]);
            bidder = Long.parseLong(f[1]);
            price = Long.parseLong(f[2]);
            channel = f[3];
            url = f[4];
            dateTime = Long.parseLong(f[5]);
            extra = f[6];
        }
    }
}
