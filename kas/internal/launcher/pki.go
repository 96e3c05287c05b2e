package launcher

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"time"

	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// credentials are the secrets one launcher run hands to every API server it
// starts. They are made once, so a restarted API server presents the same
// certificate and accepts the same token, and clients keep working.
type credentials struct {
	// caPEM is the certificate that signed the serving certificate; the
	// kubeconfig trusts it.
	caPEM []byte
	// token is the bearer token of the kubeconfig's user (group
	// system:masters).
	token string
}

// certValidity is long enough for any test run, short enough not to matter.
const certValidity = 7 * 24 * time.Hour

// makeCredentials writes the serving certificate chain and key, the service
// account key and the token file into layout's directory. The certificates
// come from client-go's cert helper: a throw-away CA and a serving
// certificate it signs, valid for the loopback addresses and localhost.
func makeCredentials(l layout) (credentials, error) {
	chain, servingKey, err := cert.GenerateSelfSignedCertKeyWithOptions(cert.SelfSignedCertKeyOptions{
		Host:         "127.0.0.1",
		AlternateIPs: []net.IP{net.IPv6loopback},
		AlternateDNS: []string{"localhost"},
		MaxAge:       certValidity,
	})
	if err != nil {
		return credentials{}, fmt.Errorf("generate serving certificate: %w", err)
	}
	caPEM, err := issuerPEM(chain)
	if err != nil {
		return credentials{}, err
	}
	// The API server reads the public half from the same file, so one
	// private key serves both service-account flags.
	saKey, err := keyutil.MakeEllipticPrivateKeyPEM()
	if err != nil {
		return credentials{}, fmt.Errorf("generate service account key: %w", err)
	}
	token, err := randomToken()
	if err != nil {
		return credentials{}, err
	}
	files := map[string][]byte{
		l.caCert():            caPEM,
		l.servingCert():       chain,
		l.servingKey():        servingKey,
		l.serviceAccountKey(): saKey,
		l.tokenFile():         tokenFileLine(token),
	}
	for path, data := range files {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return credentials{}, fmt.Errorf("write %s: %w", path, err)
		}
	}
	return credentials{caPEM: caPEM, token: token}, nil
}

// issuerPEM returns the last certificate of a serving chain (leaf first,
// then its CA), PEM-encoded: the one a client must trust.
func issuerPEM(chain []byte) ([]byte, error) {
	certs, err := cert.ParseCertsPEM(chain)
	if err != nil {
		return nil, fmt.Errorf("read serving certificate chain: %w", err)
	}
	if len(certs) < 2 {
		return nil, fmt.Errorf("serving certificate chain has %d certificates, want the leaf and its CA", len(certs))
	}
	caPEM, err := cert.EncodeCertificates(certs[len(certs)-1])
	if err != nil {
		return nil, fmt.Errorf("encode CA certificate: %w", err)
	}
	return caPEM, nil
}

// tokenFileLine is the single entry of the API server's --token-auth-file:
// token, user name, user uid, groups.
func tokenFileLine(token string) []byte {
	return fmt.Appendf(nil, "%s,kas-admin,kas-admin,\"system:masters\"\n", token)
}

func randomToken() (string, error) {
	raw := make([]byte, 24)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("draw bearer token: %w", err)
	}
	return hex.EncodeToString(raw), nil
}
