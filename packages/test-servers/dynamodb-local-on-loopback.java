// Starts DynamoDB Local (its jar on the class path, its usual arguments) listening on 127.0.0.1 only.
// DynamoDB Local has no option for its listen address and binds every interface; this takes the
// server it builds from the command line and moves its one Jetty connector onto loopback before
// starting it. Run as a single source file (Java 11+), so nothing is compiled into the repository:
//
//   java -Djava.library.path=<dir>/DynamoDBLocal_lib -cp <dir>/DynamoDBLocal.jar \
//     packages/test-servers/dynamodb-local-on-loopback.java -inMemory -sharedDb -port 8001
import java.lang.reflect.Field;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import software.amazon.dynamodb.services.local.main.ServerRunner;
import software.amazon.dynamodb.services.local.server.DynamoDBProxyServer;

public class DynamodbLocalOnLoopback {
  public static void main(String[] args) throws Exception {
    DynamoDBProxyServer proxy = ServerRunner.createServerFromCommandLineArgs(args);
    Field field = DynamoDBProxyServer.class.getDeclaredField("server");
    field.setAccessible(true);
    Server server = (Server) field.get(proxy);
    for (Connector connector : server.getConnectors()) {
      ((ServerConnector) connector).setHost("127.0.0.1");
    }
    proxy.start();
    System.out.println("DynamoDB Local listening on 127.0.0.1 only");
    proxy.join();
  }
}
