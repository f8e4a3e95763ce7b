/*
 * Stand-in for the main class of Trino 483's server (io.trino.server.TrinoServer in the
 * trino-server-main module, which Maven Central does not serve). Like the release's,
 * it refuses a Java older than the one Trino is built for, with exit code 100, and
 * starts io.trino.server.Server from trino-main with the release's version. The
 * launcher's bin/launcher.properties names this class, as the image's does.
 */
package io.trino.server;

public final class TrinoServer
{
    private static final int REQUIRED_JAVA = 25;
    private static final String VERSION = "483";

    private TrinoServer() {}

    public static void main(String[] args)
    {
        Runtime.Version java = Runtime.version();
        if (java.feature() < REQUIRED_JAVA) {
            System.err.printf("ERROR: Trino requires Java %d+ (found %s)%n", REQUIRED_JAVA, java);
            System.exit(100);
        }
        new Server().start(VERSION);
    }
}
