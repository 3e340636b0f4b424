# Sourced by the scripts that run Apache Flink 2.3 next to Weir
# (crates/weir-sql/flink/compare.sh, crates/weir-bench/flink/*.sh):
# finds Flink's jars from PyPI's apache-flink-libraries and sets
#   FLINK_LIB   the directory of the jars (or as given)
#   FLINK_JVM   the JVM flags Flink's own launcher passes on Java 17
# and the function flink_classpath; fails with how to install what is
# missing.
if [[ -z "${FLINK_LIB:-}" ]]; then
  FLINK_LIB="$(python3 -c 'import pyflink; print(list(pyflink.__path__)[0])' 2>/dev/null || true)/lib"
fi
if ! ls "$FLINK_LIB"/flink-dist-*.jar >/dev/null 2>&1; then
  echo "Flink's jars not found (FLINK_LIB=$FLINK_LIB)." >&2
  echo "Install them with: pip install --no-deps apache-flink-libraries==2.3.0" >&2
  exit 1
fi
command -v javac >/dev/null || {
  echo "javac not found: install a JDK 17 (apt-get install -y openjdk-17-jdk-headless)" >&2
  exit 1
}
FLINK_JVM=(
  -Dlog4j.configurationFile="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/crates/weir-bench/flink/log4j2.properties"
  --add-exports=java.rmi/sun.rmi.registry=ALL-UNNAMED
  --add-exports=java.security.jgss/sun.security.krb5=ALL-UNNAMED
)
for p in java.lang java.net java.io java.nio sun.nio.ch java.lang.reflect java.text java.time \
  java.util java.util.concurrent java.util.concurrent.atomic java.util.concurrent.locks; do
  FLINK_JVM+=(--add-opens=java.base/$p=ALL-UNNAMED)
done

# flink_classpath PREFIX...: the jars of FLINK_LIB named PREFIX-*.jar, in
# that order, then log4j's, joined by ':'.
flink_classpath() {
  local cp="" prefix jar
  for prefix in "$@" log4j; do
    for jar in "$FLINK_LIB/$prefix"-*.jar; do cp="${cp:+$cp:}$jar"; done
  done
  printf '%s' "$cp"
}
