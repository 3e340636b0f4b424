// The Flink side of `weir-bench memory`: the same jobs on Flink's DataStream
// API, one event per key, so that state per key and per open window can be
// compared. Run by memory.sh; see the README's Benchmarks section.
package weirpeer;

import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.KeyedStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.streaming.api.windowing.assigners.EventTimeSessionWindows;
import org.apache.flink.streaming.api.windowing.assigners.SlidingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.assigners.WindowAssigner;
import org.apache.flink.streaming.api.windowing.triggers.EventTimeTrigger;
import org.apache.flink.streaming.api.windowing.triggers.Trigger;
import org.apache.flink.streaming.api.windowing.triggers.TriggerResult;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.util.Collector;

/**
 * Usage: {@code MemoryPeer SHAPE KEYS} with SHAPE one of value-state, tumbling,
 * sliding, session. Prints {@code RESULT shape=… keys=… live_heap_bytes=…}:
 * the heap in use after a full collection taken once the last key's state
 * exists (all state live, nothing fired yet).
 */
public final class MemoryPeer {
    /** Live heap after the full collection, set inside the job (one JVM). */
    static final AtomicLong LIVE_HEAP = new AtomicLong(-1);

    static void measure() {
        System.gc();
        System.gc();
        LIVE_HEAP.set(ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed());
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: MemoryPeer value-state|tumbling|sliding|session KEYS");
            System.exit(2);
        }
        String shape = args[0];
        long keys = Long.parseLong(args[1]);
        Configuration conf = new Configuration();
        conf.set(StateBackendOptions.STATE_BACKEND, "hashmap");
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.setParallelism(1);
        env.setMaxParallelism(4096);
        DataStream<Long> ids = env.fromSequence(0, keys - 1);
        KeySelector<Long, Long> self =
                new KeySelector<Long, Long>() {
                    @Override
                    public Long getKey(Long id) {
                        return id;
                    }
                };
        if (shape.equals("value-state")) {
            ids.keyBy(self).process(new Count(keys - 1)).sinkTo(new DiscardingSink<>());
        } else {
            // Event time within the first second: no window fires before the
            // end of input.
            KeyedStream<Long, Long> keyed =
                    ids.assignTimestampsAndWatermarks(
                                    WatermarkStrategy.<Long>forBoundedOutOfOrderness(
                                                    Duration.ofSeconds(2))
                                            .withTimestampAssigner((id, t) -> id % 1000))
                            .keyBy(self);
            WindowAssigner<Object, TimeWindow> assigner;
            switch (shape) {
                case "tumbling":
                    assigner = TumblingEventTimeWindows.of(Duration.ofSeconds(10));
                    break;
                case "sliding":
                    assigner =
                            SlidingEventTimeWindows.of(Duration.ofSeconds(60), Duration.ofSeconds(1));
                    break;
                case "session":
                    assigner = EventTimeSessionWindows.withGap(Duration.ofSeconds(1));
                    break;
                default:
                    System.err.println("unknown shape: " + shape);
                    System.exit(2);
                    return;
            }
            keyed.window(assigner)
                    .trigger(new MeasureAtLast(keys - 1))
                    .aggregate(new CountSum())
                    .sinkTo(new DiscardingSink<>());
        }
        JobExecutionResult result = env.execute("memory-" + shape);
        System.out.println(
                "RESULT shape=" + shape + " keys=" + keys + " live_heap_bytes=" + LIVE_HEAP.get()
                        + " runtime_ms=" + result.getNetRuntime());
    }

    /** Counts per key in a {@code ValueState<Long>}; measures at the last key. */
    static final class Count extends KeyedProcessFunction<Long, Long, Long> {
        private final long last;
        private transient ValueState<Long> count;

        Count(long last) {
            this.last = last;
        }

        @Override
        public void open(OpenContext ctx) {
            count = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Long.class));
        }

        @Override
        public void processElement(Long id, Context ctx, Collector<Long> out) throws Exception {
            Long n = count.value();
            count.update(n == null ? 1L : n + 1);
            if (id == last) {
                measure();
            }
        }
    }

    /** Count and sum, as the Weir jobs aggregate. */
    static final class CountSum implements AggregateFunction<Long, Tuple2<Long, Long>, Tuple2<Long, Long>> {
        @Override
        public Tuple2<Long, Long> createAccumulator() {
            return Tuple2.of(0L, 0L);
        }

        @Override
        public Tuple2<Long, Long> add(Long value, Tuple2<Long, Long> acc) {
            return Tuple2.of(acc.f0 + 1, acc.f1 + 1);
        }

        @Override
        public Tuple2<Long, Long> getResult(Tuple2<Long, Long> acc) {
            return acc;
        }

        @Override
        public Tuple2<Long, Long> merge(Tuple2<Long, Long> a, Tuple2<Long, Long> b) {
            return Tuple2.of(a.f0 + b.f0, a.f1 + b.f1);
        }
    }

    /**
     * Flink's event-time trigger, which also measures the heap once the last
     * key's element is in its window (the operator adds an element to the
     * window state before it asks the trigger).
     */
    static final class MeasureAtLast extends Trigger<Object, TimeWindow> {
        private final long last;
        private final EventTimeTrigger inner = EventTimeTrigger.create();

        MeasureAtLast(long last) {
            this.last = last;
        }

        @Override
        public TriggerResult onElement(Object e, long ts, TimeWindow w, TriggerContext ctx) throws Exception {
            if (e instanceof Long && (Long) e == last && LIVE_HEAP.get() < 0) {
                measure();
            }
            return inner.onElement(e, ts, w, ctx);
        }

        @Override
        public TriggerResult onEventTime(long time, TimeWindow w, TriggerContext ctx) {
            return inner.onEventTime(time, w, ctx);
        }

        @Override
        public TriggerResult onProcessingTime(long time, TimeWindow w, TriggerContext ctx) throws Exception {
            return inner.onProcessingTime(time, w, ctx);
        }

        @Override
        public boolean canMerge() {
            return true;
        }

        @Override
        public void onMerge(TimeWindow w, OnMergeContext ctx) {
            inner.onMerge(w, ctx);
        }

        @Override
        public void clear(TimeWindow w, TriggerContext ctx) throws Exception {
            inner.clear(w, ctx);
        }
    }
}
