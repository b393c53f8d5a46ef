package main

import (
	"errors"
	"fmt"
)

// reloadConfig reads and checks every file first, and changes nothing
// unless all are good: the issuer's configuration and the certificate
// are applied together, the certificate last, since installing it cannot
// fail.
func (s *server) reloadConfig() error {
	cfg, err := loadServeConfig(s.file)
	if err != nil {
		return err
	}
	if !sameStore(cfg.LimiterStore, s.storeConfig) {
		return errors.New("limiterStore: differs from the store in use: restart to change it")
	}
	if !sameStore(cfg.TokenStore, s.tokenStoreConfig) {
		return errors.New("tokenStore: differs from the store in use: restart to change it")
	}
	if !sameStore(cfg.ClientStore, s.clientStoreConfig) {
		return errors.New("clientStore: differs from the store in use: restart to change it")
	}
	mount, err := mountPath(cfg.Issuer)
	if err != nil {
		return err
	}
	if was, _ := mountPath(s.iss.URL()); mount != was {
		return fmt.Errorf("issuer: the path %q differs from the one served, %q: restart to move it", mount, was)
	}
	useCert, err := s.readCert()
	if err != nil {
		return err
	}
	if err := s.iss.Reload(&cfg.Config); err != nil {
		return inFile(s.file, err)
	}
	useCert()
	return nil
}
