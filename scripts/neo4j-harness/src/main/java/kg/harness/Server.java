package kg.harness;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.HttpConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.harness.Neo4j;
import org.neo4j.harness.Neo4jBuilders;

/**
 * Runs an in-process Neo4j until the JVM is told to stop (SIGTERM).
 *
 * <p>Usage: {@code java -cp ... kg.harness.Server PORT WORKDIR READYFILE} with the password in
 * the environment variable KG_NEO4J_PASSWORD. Auth is enabled, so a wrong password is a real
 * authentication failure. READYFILE is written (atomically) only once Bolt accepts connections.
 */
public final class Server {
    private Server() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: Server PORT WORKDIR READYFILE");
            System.exit(2);
        }
        int port = Integer.parseInt(args[0]);
        Path workDir = Path.of(args[1]);
        Path ready = Path.of(args[2]);
        String password = System.getenv().getOrDefault("KG_NEO4J_PASSWORD", "kg-test-password");
        Files.createDirectories(workDir);

        Neo4j neo4j = Neo4jBuilders.newInProcessBuilder(workDir)
                .withDisabledServer() // no HTTP: tests speak Bolt only
                .withConfig(BoltConnector.enabled, true)
                .withConfig(BoltConnector.listen_address, new SocketAddress("127.0.0.1", port))
                .withConfig(BoltConnector.advertised_address, new SocketAddress("127.0.0.1", port))
                .withConfig(HttpConnector.enabled, false)
                .withConfig(GraphDatabaseSettings.auth_enabled, true)
                .withConfig(GraphDatabaseSettings.transaction_timeout, Duration.ofMinutes(5))
                .build();

        // The embedded API bypasses auth, so it can set the initial password on the system
        // database; CHANGE NOT REQUIRED lets clients run queries at once.
        try {
            neo4j.databaseManagementService().database("system").executeTransactionally(
                    "ALTER USER neo4j SET PASSWORD $password CHANGE NOT REQUIRED",
                    Map.of("password", password));
        } catch (RuntimeException e) {
            // e.g. a password shorter than 8 characters: fail loudly instead of running on.
            System.err.println("kg neo4j harness: cannot set the password: " + e.getMessage());
            neo4j.close();
            System.exit(1);
        }

        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                neo4j.close();
            } finally {
                stopped.countDown();
            }
        }));

        Path tmp = ready.resolveSibling(ready.getFileName() + ".tmp");
        Files.writeString(tmp, neo4j.boltURI() + "\n");
        Files.move(tmp, ready, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        System.out.println("kg neo4j harness ready: " + neo4j.boltURI());
        System.out.flush();
        stopped.await();
    }
}
