// Loads a rendered HDFS client configuration with the real Hadoop client classes and prints
// what a client would make of it, one `key=value` line per fact.
//
// Run as a single-file source program (no javac step):
//
//   java -cp hadoop-client-api.jar:hadoop-client-runtime.jar:slf4j-api.jar:jcl-over-slf4j.jar \
//       ResolveHdfsClientConfig.java <conf dir>
//
// Only `<conf dir>/core-site.xml` and `<conf dir>/hdfs-site.xml` count: the Configuration is
// created without defaults (the client jars ship core-default.xml but not hdfs-default.xml).
// HdfsConfiguration.init() registers HDFS' deprecated key names, as every HDFS client and
// daemon does, so a deprecated name in the files is read the way Hadoop reads it.
//
// Output, in configuration order:
//
//   fs.defaultFS=hdfs://simple-hdfs
//   logical=true                        (fs.defaultFS names a configured nameservice)
//   nameservices=simple-hdfs
//   namenodes.<ns>=nn0,nn1
//   rpc.<ns>.<nn>=host:port             (DFSUtilClient.getHaNnRpcAddresses)
//   http.<ns>.<nn>=host:port            (DFSUtilClient.getHaNnWebHdfsAddresses, webhdfs)
//   failover.<ns>=<class>               (the provider class, loaded)
//   automatic-failover.<ns>=true|false  (per-nameservice key, else the global one, else false)
//   ha.zookeeper.quorum=<value>         (only when set)
//
// Host names are printed as configured (InetSocketAddress.getHostString); they need not
// resolve. Hadoop itself looks every address up (NetUtils.createSocketAddr), so the JVM's
// resolver is pointed at an empty hosts file: no DNS query leaves the machine, and no slow
// resolver can stall the run. Every problem goes to stderr with exit code 1, and then
// nothing is printed on stdout.

import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.hdfs.DFSUtilClient;
import org.apache.hadoop.hdfs.HAUtilClient;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.io.retry.FailoverProxyProvider;

public class ResolveHdfsClientConfig {
    private static final String[] FILES = {"core-site.xml", "hdfs-site.xml"};

    /** A problem with the configuration, reported as one line on stderr. */
    static final class Problem extends Exception {
        Problem(String message) {
            super(message);
        }
    }

    public static void main(String[] args) {
        // slf4j-api without a provider would warn on stderr; keep stderr for our problems.
        System.setProperty("slf4j.internal.verbosity", "ERROR");
        // Before any lookup: every host name is unresolved, offline and at once.
        System.setProperty("jdk.net.hosts.file", "/dev/null");
        if (args.length != 1) {
            fail("usage: java -cp <hadoop client jars> ResolveHdfsClientConfig.java <conf dir>");
        }
        List<String> lines = new ArrayList<>();
        try {
            resolve(load(java.nio.file.Path.of(args[0])), lines);
        } catch (Problem problem) {
            fail(problem.getMessage());
        } catch (RuntimeException error) {
            // Hadoop reports bad XML, bad addresses and unknown classes as runtime exceptions.
            fail(describe(error));
        }
        lines.forEach(System.out::println);
    }

    static Configuration load(java.nio.file.Path dir) throws Problem {
        HdfsConfiguration.init();
        Configuration conf = new Configuration(false);
        for (String name : FILES) {
            java.nio.file.Path file = dir.resolve(name);
            if (!Files.isRegularFile(file)) {
                throw new Problem(file + " does not exist");
            }
            conf.addResource(new org.apache.hadoop.fs.Path(file.toAbsolutePath().toString()));
        }
        conf.size(); // parse both files now, so XML errors surface here
        return conf;
    }

    static void resolve(Configuration conf, List<String> lines) throws Problem {
        String defaultFs = conf.getTrimmed(FileSystem.FS_DEFAULT_NAME_KEY);
        if (defaultFs == null || defaultFs.isEmpty()) {
            throw new Problem(FileSystem.FS_DEFAULT_NAME_KEY + " is not set");
        }
        lines.add("fs.defaultFS=" + defaultFs);
        lines.add("logical=" + HAUtilClient.isLogicalUri(conf, URI.create(defaultFs)));

        Collection<String> nameservices = DFSUtilClient.getNameServiceIds(conf);
        lines.add("nameservices=" + String.join(",", nameservices));
        Map<String, Map<String, InetSocketAddress>> rpc = DFSUtilClient.getHaNnRpcAddresses(conf);
        Map<String, Map<String, InetSocketAddress>> http =
                DFSUtilClient.getHaNnWebHdfsAddresses(conf, "webhdfs");
        for (String ns : nameservices) {
            Collection<String> namenodes = DFSUtilClient.getNameNodeIds(conf, ns);
            if (namenodes.isEmpty()) {
                throw new Problem("dfs.ha.namenodes." + ns + " lists no namenodes");
            }
            lines.add("namenodes." + ns + "=" + String.join(",", namenodes));
            for (String nn : namenodes) {
                lines.add("rpc." + ns + "." + nn + "="
                        + address(rpc, ns, nn, "dfs.namenode.rpc-address"));
            }
            for (String nn : namenodes) {
                lines.add("http." + ns + "." + nn + "="
                        + address(http, ns, nn, "dfs.namenode.http-address"));
            }
            String providerKey = "dfs.client.failover.proxy.provider." + ns;
            Class<?> provider = conf.getClass(providerKey, null, FailoverProxyProvider.class);
            if (provider == null) {
                throw new Problem(providerKey + " is not set");
            }
            lines.add("failover." + ns + "=" + provider.getName());
            String global = bool(conf, "dfs.ha.automatic-failover.enabled", "false");
            lines.add("automatic-failover." + ns + "="
                    + bool(conf, "dfs.ha.automatic-failover.enabled." + ns, global));
        }
        String quorum = conf.getTrimmed("ha.zookeeper.quorum");
        if (quorum != null) {
            lines.add("ha.zookeeper.quorum=" + quorum);
        }
    }

    /** The `host:port` Hadoop resolved for one namenode, or a problem naming the missing key. */
    static String address(
            Map<String, Map<String, InetSocketAddress>> addresses, String ns, String nn, String key)
            throws Problem {
        InetSocketAddress address = addresses.getOrDefault(ns, Map.of()).get(nn);
        if (address == null) {
            throw new Problem(key + "." + ns + "." + nn + " is not set");
        }
        return address.getHostString() + ":" + address.getPort();
    }

    /** A boolean key read strictly: Configuration.getBoolean would take a typo as the default. */
    static String bool(Configuration conf, String key, String fallback) throws Problem {
        String value = conf.getTrimmed(key);
        if (value == null) {
            return fallback;
        }
        if (!value.equalsIgnoreCase("true") && !value.equalsIgnoreCase("false")) {
            throw new Problem(key + " is \"" + value + "\", not true or false");
        }
        return value.toLowerCase();
    }

    /** The error and those of its causes that add something (Hadoop wraps them twice). */
    static String describe(Throwable error) {
        StringBuilder text = new StringBuilder(error.toString());
        for (Throwable cause = error.getCause(); cause != null; cause = cause.getCause()) {
            if (!text.toString().contains(cause.toString())) {
                text.append("; caused by ").append(cause);
            }
        }
        return text.toString();
    }

    static void fail(String message) {
        System.err.println("ResolveHdfsClientConfig: " + message);
        System.exit(1);
    }
}
