// Runs a SQL script on Flink 2.3's Table API (streaming mode, one local
// JVM) and prints every result row of its SELECT statements as a changelog
// line, `+I[v1, v2, ...]`, with values written as Weir writes them (a
// TIMESTAMP(3) as `yyyy-MM-dd HH:mm:ss.SSS`, a DECIMAL in plain notation),
// so that the two outputs compare line by line. Run by compare.sh; an
// INSERT runs to its end and its duration goes to stderr (for
// crates/weir-bench/flink/sql_rate.sh).
package weirpeer;

import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.types.Row;
import org.apache.flink.util.CloseableIterator;

public final class SqlPeer {
    private static final DateTimeFormatter TS = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss.SSS");
    private static final Pattern SET = Pattern.compile("(?is)^SET\\s+'([^']*)'\\s*=\\s*'([^']*)'$");

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: SqlPeer SCRIPT.sql");
            System.exit(2);
        }
        TableEnvironment env = TableEnvironment.create(EnvironmentSettings.inStreamingMode());
        env.getConfig().set("parallelism.default", "1");
        env.getConfig().set("table.local-time-zone", "UTC");
        for (String statement : statements(Files.readString(Path.of(args[0])))) {
            Matcher set = SET.matcher(statement);
            if (set.matches()) {
                env.getConfig().set(set.group(1), set.group(2));
                continue;
            }
            String head = statement.trim().toUpperCase();
            long started = System.nanoTime();
            TableResult result = env.executeSql(statement);
            if (head.startsWith("INSERT")) {
                // The job runs until its input ends; how long it took is
                // what the rate comparison reads.
                result.await();
                System.err.printf("INSERT took %d ms%n", (System.nanoTime() - started) / 1_000_000);
            }
            if (head.startsWith("SELECT") || head.startsWith("WITH") || head.startsWith("VALUES")) {
                try (CloseableIterator<Row> rows = result.collect()) {
                    while (rows.hasNext()) {
                        System.out.println(format(rows.next()));
                    }
                }
            }
        }
        System.out.flush();
        // Flink's local cluster may log a harmless error after the end of
        // bounded input; the results are out.
        System.exit(0);
    }

    /** The script's statements: split at ';' outside strings, comments dropped. */
    static List<String> statements(String script) {
        List<String> out = new ArrayList<>();
        StringBuilder cur = new StringBuilder();
        boolean quoted = false;
        for (String line : script.split("\n", -1)) {
            for (int i = 0; i < line.length(); i++) {
                char c = line.charAt(i);
                if (!quoted && c == '-' && i + 1 < line.length() && line.charAt(i + 1) == '-') {
                    break;
                }
                if (c == '\'') {
                    quoted = !quoted;
                }
                if (c == ';' && !quoted) {
                    if (!cur.toString().isBlank()) {
                        out.add(cur.toString().trim());
                    }
                    cur.setLength(0);
                } else {
                    cur.append(c);
                }
            }
            cur.append('\n');
        }
        if (!cur.toString().isBlank()) {
            out.add(cur.toString().trim());
        }
        return out;
    }

    static String format(Row row) {
        StringBuilder b = new StringBuilder(row.getKind().shortString()).append('[');
        for (int i = 0; i < row.getArity(); i++) {
            if (i > 0) {
                b.append(", ");
            }
            b.append(value(row.getField(i)));
        }
        return b.append(']').toString();
    }

    static String value(Object v) {
        if (v == null) {
            return "NULL";
        }
        if (v instanceof LocalDateTime) {
            return TS.format((LocalDateTime) v);
        }
        if (v instanceof Instant) {
            return TS.format(LocalDateTime.ofInstant((Instant) v, ZoneOffset.UTC));
        }
        if (v instanceof LocalDate) {
            return v.toString();
        }
        if (v instanceof BigDecimal) {
            return ((BigDecimal) v).toPlainString();
        }
        if (v instanceof Boolean) {
            return ((Boolean) v) ? "TRUE" : "FALSE";
        }
        return v.toString();
    }
}
