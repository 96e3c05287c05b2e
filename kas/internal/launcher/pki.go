package launcher

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"time"
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

// makeCredentials writes the serving certificate and key, the service account
// key pair and the token file into layout's directory.
func makeCredentials(l layout) (credentials, error) {
	caKey, caCert, err := newCA()
	if err != nil {
		return credentials{}, err
	}
	servingKey, servingCert, err := newServingCert(caKey, caCert)
	if err != nil {
		return credentials{}, err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return credentials{}, fmt.Errorf("generate service account key: %w", err)
	}
	token, err := randomToken()
	if err != nil {
		return credentials{}, err
	}

	caPEM := pemBlock("CERTIFICATE", caCert.Raw)
	// The chain lets clients that trust only the CA verify the leaf.
	chain := append(pemBlock("CERTIFICATE", servingCert.Raw), caPEM...)
	files := []struct {
		path string
		data func() ([]byte, error)
	}{
		{l.caCert(), func() ([]byte, error) { return caPEM, nil }},
		{l.servingCert(), func() ([]byte, error) { return chain, nil }},
		{l.servingKey(), func() ([]byte, error) { return ecKeyPEM(servingKey) }},
		{l.serviceAccountKey(), func() ([]byte, error) { return ecKeyPEM(saKey) }},
		{l.serviceAccountPub(), func() ([]byte, error) { return publicKeyPEM(&saKey.PublicKey) }},
		{l.tokenFile(), func() ([]byte, error) { return tokenFileLine(token), nil }},
	}
	for _, f := range files {
		data, err := f.data()
		if err != nil {
			return credentials{}, err
		}
		if err := os.WriteFile(f.path, data, 0o600); err != nil {
			return credentials{}, fmt.Errorf("write %s: %w", f.path, err)
		}
	}
	return credentials{caPEM: caPEM, token: token}, nil
}

// tokenFileLine is the single entry of the API server's --token-auth-file:
// token, user name, user uid, groups.
func tokenFileLine(token string) []byte {
	return fmt.Appendf(nil, "%s,kas-admin,kas-admin,\"system:masters\"\n", token)
}

func newCA() (*ecdsa.PrivateKey, *x509.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate CA key: %w", err)
	}
	tmpl, err := certTemplate("kas-ca")
	if err != nil {
		return nil, nil, err
	}
	tmpl.IsCA = true
	tmpl.BasicConstraintsValid = true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	cert, err := signCert(tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("self-sign CA: %w", err)
	}
	return key, cert, nil
}

// newServingCert issues the API server's certificate, valid for the loopback
// addresses only.
func newServingCert(caKey *ecdsa.PrivateKey, ca *x509.Certificate) (*ecdsa.PrivateKey, *x509.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate serving key: %w", err)
	}
	tmpl, err := certTemplate("kas-apiserver")
	if err != nil {
		return nil, nil, err
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	tmpl.DNSNames = []string{"localhost"}
	cert, err := signCert(tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("sign serving certificate: %w", err)
	}
	return key, cert, nil
}

func certTemplate(commonName string) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, fmt.Errorf("draw certificate serial: %w", err)
	}
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: commonName},
		NotBefore:    now.Add(-time.Hour), // tolerate a little clock skew
		NotAfter:     now.Add(certValidity),
	}, nil
}

func signCert(tmpl, parent *x509.Certificate, pub *ecdsa.PublicKey, signer *ecdsa.PrivateKey) (*x509.Certificate, error) {
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
	if err != nil {
		return nil, err
	}
	return x509.ParseCertificate(der)
}

func ecKeyPEM(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode private key: %w", err)
	}
	return pemBlock("EC PRIVATE KEY", der), nil
}

func publicKeyPEM(key *ecdsa.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode public key: %w", err)
	}
	return pemBlock("PUBLIC KEY", der), nil
}

func pemBlock(kind string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
}

func randomToken() (string, error) {
	raw := make([]byte, 24)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("draw bearer token: %w", err)
	}
	return hex.EncodeToString(raw), nil
}
