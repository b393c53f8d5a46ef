package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"
)

// onHangups takes every SIGHUP until done closes: a reload while the
// service is ready, a log line while it starts or stops.
func (s *server) onHangups(done <-chan struct{}, hangups <-chan os.Signal) {
	for {
		select {
		case <-done:
			return
		case <-hangups:
			if !s.ready.Load() {
				s.logger.Warn("SIGHUP ignored: the service is starting or stopping; nothing is reloaded")
				continue
			}
			s.reload()
		}
	}
}

// reload reads the configuration and TLS files again and applies them, or
// nothing: a bad file is logged with its error, which names the field.
func (s *server) reload() {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	err := s.reloadFiles()
	now := time.Now().Unix()
	if err != nil {
		s.reloadsFailed.Add(1)
		s.lastFailed.Store(now)
		s.logger.Error("reload failed: the previous configuration stays", slog.String("file", s.file), slog.String("error", explainPermission(err).Error()))
		return
	}
	s.reloadsOK.Add(1)
	s.lastOK.Store(now)
	s.logger.Info("reloaded", slog.String("file", s.file))
}

// reloadFiles reads and checks every file first, and changes nothing
// unless all are good: the issuer's configuration and the certificate
// are applied together, the certificate last, since installing it cannot
// fail.
func (s *server) reloadFiles() error {
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
	useCert := func() {}
	if s.cert != nil {
		if useCert, err = s.cert.Read(); err != nil {
			return err
		}
	}
	if err := s.iss.Reload(&cfg.Config); err != nil {
		return inFile(s.file, err)
	}
	useCert()
	return nil
}
